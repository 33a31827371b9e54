package plan

import (
	"io"
	"strings"
	"testing"

	"proxybench/internal/manifest"
)

// The direct control is one more "proxy" of every round, after the
// plan's proxies, with the same load; its cells ask for the origin's own
// path, and the scenarios with no direct equivalent are not applicable.
func TestExpandDirect(t *testing.T) {
	t.Parallel()
	p, err := Load(strings.Fields("-tier 5s -proxies nginx,haproxy -origins fast,go -repeats 2 -rate 500 -scenarios simple,auth,tls,payload-1k -direct"), now, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	x, err := p.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	direct := map[string]Cell{}
	for _, c := range x.Cells {
		if c.Scenario == "simple" {
			ids = append(ids, c.ID)
		}
		if c.Proxy == "direct" {
			direct[c.ID] = c
		}
		if c.Rate != 500 || c.Mode != "open" {
			t.Errorf("%s: rate %g mode %s, want the plan's open loop at 500", c.ID, c.Rate, c.Mode)
		}
	}
	want := "nginx.fast.simple.5s.r1 nginx.fast.simple.5s.aa.r1 nginx.go.simple.5s.r1 haproxy.fast.simple.5s.r1 haproxy.go.simple.5s.r1 direct.fast.simple.5s.r1 direct.go.simple.5s.r1 " +
		"nginx.fast.simple.5s.aa.r2 nginx.fast.simple.5s.r2 nginx.go.simple.5s.r2 haproxy.fast.simple.5s.r2 haproxy.go.simple.5s.r2 direct.fast.simple.5s.r2 direct.go.simple.5s.r2"
	if got := strings.Join(ids, " "); got != want {
		t.Errorf("simple cells\n got %s\nwant %s", got, want)
	}
	if len(direct) != 2*2*4 {
		t.Fatalf("%d direct cells, want 2 origins x 2 repeats x 4 scenarios", len(direct))
	}
	for id, wantPath := range map[string]string{"direct.fast.simple.5s.r1": "/", "direct.go.payload-1k.5s.r2": "/bytes/1024"} {
		if c := direct[id]; c.Path != wantPath || c.Skip != nil || c.Arm != "" {
			t.Errorf("%s: path %q skip %v arm %q, want %q, running, the plan's arm", id, c.Path, c.Skip, c.Arm, wantPath)
		}
	}
	for _, id := range []string{"direct.fast.auth.5s.r1", "direct.go.tls.5s.r2"} {
		if c := direct[id]; c.Skip == nil || c.Skip.Kind != manifest.SkipNotApplicable || !strings.Contains(c.Skip.Reason, "direct control") {
			t.Errorf("%s: skip %+v, want not applicable to the direct control", id, c.Skip)
		}
	}
}

func TestDirectValidation(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"-proxies nginx,direct":              "ask for it with direct: true (-direct",
		"-direct -duet-cpus 0.5 -repeats 2":  "direct with a duet",
		"-direct -observer -repeats 2":       "direct with a duet or an observer",
		"-direct -dist swarm -proxies nginx": "direct with dist swarm",
	} {
		_, err := Load(strings.Fields(args), now, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}
