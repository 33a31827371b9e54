package scenario

import "testing"

func TestH2AndH3Shape(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		sc    *Scenario
		proto string
		na    []string
	}{
		{&h2, "h2", nil},
		{&h3, "h3", []string{"nginx", "haproxy"}},
	} {
		sh := tt.sc.Resolve(defaults)
		if sh.Proto != tt.proto || sh.Streams != H2Streams || H2Streams != 10 || sh.NewConn || !tt.sc.Secure() ||
			tt.sc.Path("go", defaults) != "/go/" || tt.sc.Report != tlsTable {
			t.Errorf("%s: shape %+v", tt.sc.Name, sh)
		}
		for _, p := range []string{"nginx", "haproxy", "traefik", "caddy"} {
			skip := tt.sc.Skip(p)
			na := false
			for _, x := range tt.na {
				na = na || x == p
			}
			if na != (skip != nil) || (skip != nil && len(skip.Reason) < 30) {
				t.Errorf("%s on %s: skip %+v, want n/a %v with a reason", tt.sc.Name, p, skip, na)
			}
		}
	}
}
