package plan

import (
	"encoding/json"
	"io"
	"math"
	"strings"
	"testing"

	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
)

func TestScenarioCells(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		args  string
		check func(t *testing.T, cells map[string]Cell)
	}{
		{"auth mix and n/a", "-proxies nginx,traefik -scenarios auth -auth-invalid 0.2", func(t *testing.T, cells map[string]Cell) {
			c := cells["nginx.fast.auth.quick.r1"]
			if c.Skip != nil || len(c.Variants) != 3 || c.Variants[0].Name != "valid" || math.Abs(c.Variants[0].Share-0.8) > 1e-9 ||
				c.Variants[1].Want != 401 || c.Variants[2].Header.Get(scenario.APIKeyHeader) != scenario.WrongAPIKey || c.Path != "/auth/fast/" {
				t.Errorf("nginx auth cell %+v", c)
			}
			if c.Def == nil || c.Def.Name != "auth" {
				t.Errorf("nginx auth cell resolved from %+v, want the auth scenario", c.Def)
			}
			if tr := cells["traefik.fast.auth.quick.r1"]; tr.Skip == nil || tr.Skip.Kind != manifest.SkipNotApplicable || tr.Skip.Reason == "" {
				t.Errorf("traefik auth should be n/a with a reason, skip %+v", tr.Skip)
			}
		}},
		{"faults on fast alone, the schedule on the cell", "-proxies nginx -origins fast,go -scenarios faults -faults kill@10%-30%", func(t *testing.T, cells map[string]Cell) {
			c := cells["nginx.fast.faults.quick.r1"]
			if c.Skip != nil || c.Path != "/faults/fast/" || len(c.Faults) != 1 || c.Faults[0].Kind != scenario.FaultKill || c.Faults[0].To != 0.3 {
				t.Errorf("nginx faults cell %+v", c)
			}
			if g := cells["nginx.go.faults.quick.r1"]; g.Skip == nil || g.Skip.Kind != manifest.SkipNotApplicable || !strings.Contains(g.Skip.Reason, "origin fast alone") {
				t.Errorf("faults on go should be n/a, skip %+v", g.Skip)
			}
		}},
		{"faults in a group with 3 loadgens: n/a, the rest runs", "-proxies nginx -scenarios simple,faults,churn -loadgens 3", func(t *testing.T, cells map[string]Cell) {
			if f := cells["nginx.fast.faults.quick.r1"]; f.Skip == nil || f.Skip.Kind != manifest.SkipNotApplicable || !strings.Contains(f.Skip.Reason, "loadgens 3") {
				t.Errorf("faults with 3 loadgens should be n/a naming them, skip %+v", f.Skip)
			}
			if c := cells["nginx.fast.simple.quick.r1"]; c.Skip != nil {
				t.Errorf("simple beside it skipped: %+v", c.Skip)
			}
		}},
		{"all valid is one variant", "-proxies nginx -scenarios auth -auth-invalid 0", func(t *testing.T, cells map[string]Cell) {
			if c := cells["nginx.fast.auth.quick.r1"]; len(c.Variants) != 0 {
				t.Errorf("variants %+v, want none listed (one variant)", c.Variants)
			}
		}},
		{"ratelimit is open loop above the limit", "-proxies haproxy,caddy -scenarios ratelimit -concurrency 80", func(t *testing.T, cells map[string]Cell) {
			c := cells["haproxy.fast.ratelimit.quick.r1"]
			if c.Mode != "open" || c.Rate != 1500 || c.LimitRPS != scenario.RateLimitRPS || c.LimitBurst != scenario.RateLimitBurst || c.Concurrency != 80 {
				t.Errorf("haproxy ratelimit cell %+v", c)
			}
			if sk := cells["caddy.fast.ratelimit.quick.r1"].Skip; sk == nil || sk.Kind != manifest.SkipNotApplicable || !strings.Contains(sk.Reason, "plugin") {
				t.Errorf("caddy ratelimit should be n/a for want of a plugin: %+v", sk)
			}
		}},
		{"slow delay in the path", "-proxies caddy -scenarios slow -slow-delay 20s", func(t *testing.T, cells map[string]Cell) {
			if c := cells["caddy.fast.slow.quick.r1"]; c.Path != "/fast/delay/20000" || c.DelayS != 20 || c.Mode != "closed" {
				t.Errorf("slow cell %+v", c)
			}
		}},
		{"payload group", "-proxies nginx -scenarios payload-1k,simple,payload", func(t *testing.T, cells map[string]Cell) {
			if len(cells) != 5 {
				t.Errorf("%d cells, want simple + 4 payload", len(cells))
			}
			if c := cells["nginx.fast.payload-1m.quick.r1"]; c.BodyBytes != 1<<20 || c.Path != "/fast/bytes/1048576" {
				t.Errorf("payload-1m cell %+v", c)
			}
			if c := cells["nginx.fast.upload-64k.quick.r1"]; c.Method != "POST" || c.Path != "/fast/echo" || c.BodyBytes != 65536 {
				t.Errorf("upload cell %+v", c)
			}
		}},
		{"churn", "-proxies nginx -scenarios churn", func(t *testing.T, cells map[string]Cell) {
			if c := cells["nginx.fast.churn.quick.r1"]; !c.NewConn || c.Skip != nil {
				t.Errorf("churn cell %+v", c)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Load(strings.Fields("-origins fast "+tt.args), now, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			x, err := p.Expand()
			if err != nil {
				t.Fatal(err)
			}
			cells := map[string]Cell{}
			for _, c := range x.Cells {
				cells[c.ID] = c
			}
			tt.check(t, cells)
		})
	}
}

func TestScenarioSettingsValidated(t *testing.T) {
	t.Parallel()
	tests := []struct{ args, want string }{
		{"-auth-invalid 1.5", "auth_invalid 1.5"},
		{"-auth-invalid -0.1", "auth_invalid -0.1"},
		{"-ratelimit-offered 0", "ratelimit_offered 0"},
		{"-slow-delay 21s", "slow_delay 21s"},
		{"-slow-delay 1500us", "whole milliseconds"},
		{"-scenarios simple,simple", `"simple" listed twice`},
		{"-scenarios payload,payload-64k", `"payload-64k" listed twice`},
		{"-faults kill@40%-20%", `faults "kill@40%-20%": fault 1`},
		{"-faults boom@10%-20%", `unknown kind "boom"`},
		{"-scenarios faults -loadgens 2", "scenario faults with loadgens 2"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			t.Parallel()
			_, err := Load(strings.Fields(tt.args), now, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestSkipJSON: plan.json shows a skip as the text of the manifest cell's
// reason.
func TestSkipJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		skip *Skip
		want string
	}{
		{&Skip{Kind: manifest.SkipNotApplicable, Reason: "no plugin"}, `{"skip":"n/a: no plugin"}`},
		{&Skip{Kind: manifest.SkipNotReady, Reason: "not yet"}, `{"skip":"not yet"}`},
		{nil, `{}`},
	} {
		b, err := json.Marshal(struct {
			Skip *Skip `json:"skip,omitempty"`
		}{tt.skip})
		if err != nil || string(b) != tt.want {
			t.Errorf("%+v: %s (%v), want %s", tt.skip, b, err, tt.want)
		}
	}
}
