//go:build e2e

package e2e

import (
	"strings"
	"testing"
)

// TestFlagWrongAnswers: a proxy that answers 401 to 30 % of the requests
// with a valid API key. 401 is a status the auth scenario expects (for the
// invalid keys), so counting statuses alone would call those answers
// goodput and the cell valid; they are wrong answers: no goodput, and the
// cell is invalid for unexpected_status, naming them. The control is the
// stack's nginx in the same run, whose every answer fits its key.
func TestFlagWrongAnswers(t *testing.T) {
	testProxy(t, `        location /fast/ { proxy_pass http://fast/; }
        location /auth/fast/ {
            if ($http_x_api_key !~ "^pb-key-[1-4]$") { return 401; }
            if ($pb_fault = 404) { return 401; }
            proxy_pass http://fast/;
        }`)
	cells := runCells(t, t.TempDir(), "wrong-answers", nil, "-tier", "3s", "-proxies", "nginx,custom", "-origins", "fast",
		"-scenarios", "auth", "-concurrency", "20", "-isolate=false")
	c := cell(t, cells, "custom.fast.auth.3s.r1")
	mustFire(t, c, "unexpected_status", "invalid", "a 401 to a valid key")
	if c.Goodput == nil || c.RPS == nil || *c.Goodput > 0.85**c.RPS {
		t.Errorf("%s: goodput %v of %v responses/s: the wrong 401s were counted as goodput", c.ID, deref(c.Goodput), deref(c.RPS))
	}
	honest := cell(t, cells, "nginx.fast.auth.3s.r1")
	mustStayQuiet(t, honest, "unexpected_status", "misrouted")
	if strings.Contains(honest.flags(), "valid key") {
		t.Errorf("control %s: %s", honest.ID, honest.flags())
	}
}
