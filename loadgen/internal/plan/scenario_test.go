package plan

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"proxybench/internal/stack"
)

func TestScenarioTable(t *testing.T) {
	t.Parallel()
	p := Default()
	seen := map[string]bool{}
	for _, sc := range Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			if sc.NotReady != "" {
				t.Errorf("scenario %s is still not ready: %s", sc.Name, sc.NotReady)
			}
			if path := sc.Path("fast", &p); !strings.HasPrefix(path, "/") || !strings.Contains(path, "fast") {
				t.Errorf("path %q does not route to origin fast", path)
			}
			for proxy, why := range sc.NA {
				if _, err := stack.LookupProxy(proxy); err != nil || why == "" {
					t.Errorf("n/a entry %q: %v (reason %q)", proxy, err, why)
				}
			}
			var share float64
			for _, v := range sc.VariantsFor(&p) {
				share += v.Share
			}
			if math.Abs(share-1) > 1e-9 {
				t.Errorf("variant shares add up to %g, want 1", share)
			}
		})
		if seen[sc.Name] {
			t.Errorf("scenario %s listed twice", sc.Name)
		}
		seen[sc.Name] = true
	}
	for g, members := range ScenarioGroups {
		for _, m := range members {
			if !seen[m] {
				t.Errorf("group %s names unknown scenario %s", g, m)
			}
		}
	}
}

func TestScenarioCells(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		args  string
		check func(t *testing.T, cells map[string]Cell)
	}{
		{"auth mix and n/a", "-proxies nginx,traefik -scenarios auth -auth-invalid 0.2", func(t *testing.T, cells map[string]Cell) {
			c := cells["nginx.fast.auth.quick.r1"]
			if c.Skip != "" || len(c.Variants) != 3 || c.Variants[0].Name != "valid" || math.Abs(c.Variants[0].Share-0.8) > 1e-9 ||
				c.Variants[1].Want != 401 || c.Variants[2].Header.Get(APIKeyHeader) != WrongAPIKey || c.Path != "/auth/fast/" {
				t.Errorf("nginx auth cell %+v", c)
			}
			if tr := cells["traefik.fast.auth.quick.r1"]; !strings.HasPrefix(tr.Skip, NA) {
				t.Errorf("traefik auth should be n/a, skip %q", tr.Skip)
			}
		}},
		{"all valid is one variant", "-proxies nginx -scenarios auth -auth-invalid 0", func(t *testing.T, cells map[string]Cell) {
			if c := cells["nginx.fast.auth.quick.r1"]; len(c.Variants) != 0 {
				t.Errorf("variants %+v, want none listed (one variant)", c.Variants)
			}
		}},
		{"ratelimit is open loop above the limit", "-proxies haproxy,caddy -scenarios ratelimit -concurrency 80", func(t *testing.T, cells map[string]Cell) {
			c := cells["haproxy.fast.ratelimit.quick.r1"]
			if c.Mode != "open" || c.Rate != 1500 || c.LimitRPS != RateLimitRPS || c.LimitBurst != RateLimitBurst || c.Concurrency != 80 {
				t.Errorf("haproxy ratelimit cell %+v", c)
			}
			if !strings.Contains(cells["caddy.fast.ratelimit.quick.r1"].Skip, "plugin") {
				t.Errorf("caddy ratelimit should be n/a for want of a plugin: %q", cells["caddy.fast.ratelimit.quick.r1"].Skip)
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
			if c := cells["nginx.fast.churn.quick.r1"]; !c.NewConn || c.Skip != "" {
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

// TestProxyConfigsMatchTable keeps the proxies' scenario routes and the
// numbers cells are judged against in step: a limit changed in one place
// only would make every precision figure wrong.
func TestProxyConfigsMatchTable(t *testing.T) {
	t.Parallel()
	limit, burst := strconv.Itoa(RateLimitRPS), strconv.Itoa(RateLimitBurst)
	keys := strings.Join(ValidAPIKeys, "|")
	tests := []struct {
		file string
		want []string // regexps that must all match
	}{
		{"nginx/nginx.conf", []string{`rate=` + limit + `r/s`, `burst=` + burst + ` nodelay`, `limit_req_status 429`, `map \$http_x_api_key`,
			`return 401`, `(?s)pb-key-1 1;\s+pb-key-2 1;\s+pb-key-3 1;\s+pb-key-4 1;`}},
		{"haproxy/haproxy.cfg", []string{`sc_gpc0_rate\(0\) ge ` + limit, `deny_status 429`, `sc-inc-gpc0\(0\)`, `gpc0_rate\(1s\)`,
			`return status 401`, `pb-key-1 pb-key-2 pb-key-3 pb-key-4`}},
		{"traefik/dynamic.yml", []string{`average: ` + limit, `period: 1s`, `burst: ` + burst, `requestHeaderName: ` + APIKeyHeader}},
		{"caddy/Caddyfile", []string{`header_regexp ` + APIKeyHeader + ` \^\(` + regexp.QuoteMeta(keys) + `\)\$`, `401`}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(filepath.Join("..", "..", "..", "compose", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !regexp.MustCompile(w).Match(b) {
					t.Errorf("%s does not match %q: the proxy config and plan/scenario.go disagree", tt.file, w)
				}
			}
		})
	}
}

func TestExpandGroupsKeepsOrder(t *testing.T) {
	t.Parallel()
	got := strings.Join(expandGroups([]string{"churn", "payload", "payload-64k", "simple"}), ",")
	want := "churn,payload-1k,payload-64k,payload-1m,upload-64k,payload-64k,simple"
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
