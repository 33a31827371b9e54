package scenario

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

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
			b, err := os.ReadFile(filepath.Join("..", "..", "compose", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !regexp.MustCompile(w).Match(b) {
					t.Errorf("%s does not match %q: the proxy config and internal/scenario disagree", tt.file, w)
				}
			}
		})
	}
}
