package scenario

import "testing"

func TestSimple(t *testing.T) {
	t.Parallel()
	sh := simple.Resolve(defaults)
	if simple.Skip("traefik") != nil || simple.Path("go", defaults) != "/go/" || sh.Method != "" || sh.NewConn || len(sh.Variants) != 0 {
		t.Errorf("simple: skip %v, path %s, shape %+v", simple.Skip("traefik"), simple.Path("go", defaults), sh)
	}
	if simple.Account != nil || simple.Report != nil || simple.Probes != 0 || simple.Statuses()[0] != "2xx" {
		t.Error("simple has an account, report, probe or status of its own")
	}
}
