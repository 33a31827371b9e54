package runner

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/routecheck"
)

// The direct control's cells go to the origin's own port and path, never
// through a proxy; the proxy's go through it. Counted at both real HTTP
// servers (the origin's own count is the independent reading).
func TestDirectCellsReachTheOrigin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var atOrigin, atProxy atomic.Int64
	fast := fakeProxy(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" { // the origin's own path, no /fast/ prefix
			http.NotFound(w, r)
			return
		}
		atOrigin.Add(1)
		w.Header().Set("X-Origin", "fast")
		io.WriteString(w, routecheck.Body)
	})
	nginx := fakeProxy(t, func(w http.ResponseWriter, r *http.Request) { atProxy.Add(1); origin(w, r) })
	code := run(context.Background(), args(t, dir, "-tier", "1s", "-proxies", "nginx", "-origins", "fast", "-direct", "-repeats", "2", "-control=false"),
		io.Discard, io.Discard, testLog(t), env{target: targets(map[string]*httptest.Server{"nginx": nginx}),
			directTarget: targets(map[string]*httptest.Server{"fast": fast}), docker: noDocker, clock: &sleeper{}})
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var direct, proxied int64
	for _, c := range m.Cells {
		ids = append(ids, c.ID)
		if c.Status != manifest.CellOK || c.Requests == 0 {
			t.Errorf("%s: %s %q, %d requests", c.ID, c.Status, c.Reason, c.Requests)
		}
		if c.Proxy == "direct" {
			direct += c.Requests
			if c.Path != "/" {
				t.Errorf("%s: path %q, want the origin's own /", c.ID, c.Path)
			}
		} else {
			proxied += c.Requests
		}
	}
	if got := strings.Join(ids, " "); got != "nginx.fast.simple.1s.r1 direct.fast.simple.1s.r1 nginx.fast.simple.1s.r2 direct.fast.simple.1s.r2" {
		t.Errorf("cells %s", got)
	}
	// Each server also saw its preflight and the requests completed after
	// a window (late), never the other's traffic.
	if n := atOrigin.Load(); n < direct || n > direct+direct/5+10 {
		t.Errorf("the origin answered %d requests, the direct cells count %d", n, direct)
	}
	if n := atProxy.Load(); n < proxied || n > proxied+proxied/5+10 {
		t.Errorf("the proxy answered %d requests, its cells count %d", n, proxied)
	}
}
