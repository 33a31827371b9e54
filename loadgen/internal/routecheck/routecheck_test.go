package routecheck_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"proxybench/loadgen/internal/routecheck"
	"proxybench/loadgen/internal/routecheck/routechecktest"
)

func TestCheckRoute(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		route     func(w http.ResponseWriter, origin string) bool
		base      string // overrides the server
		wantShort string
		wantIn    string
	}{
		{name: "ok", wantShort: "ok"},
		{name: "bad gateway", route: func(w http.ResponseWriter, _ string) bool {
			http.Error(w, "upstream down", http.StatusBadGateway)
			return true
		}, wantShort: "status 502", wantIn: "status 502, want 200 (upstream down)"},
		{name: "wrong origin", route: func(w http.ResponseWriter, _ string) bool {
			w.Header().Set("X-Origin", "node")
			io.WriteString(w, routecheck.Body)
			return true
		}, wantShort: "wrong origin", wantIn: `X-Origin "node", want "fast"`},
		{name: "no x-origin", route: func(w http.ResponseWriter, _ string) bool {
			io.WriteString(w, routecheck.Body)
			return true
		}, wantShort: "no X-Origin"},
		{name: "bad body", route: func(w http.ResponseWriter, o string) bool {
			w.Header().Set("X-Origin", o)
			io.WriteString(w, "welcome to nginx\n")
			return true
		}, wantShort: "bad body", wantIn: `body "welcome to nginx"`},
		{name: "redirect not followed", route: func(w http.ResponseWriter, _ string) bool {
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(http.StatusMovedPermanently)
			return true
		}, wantShort: "status 301"},
		{name: "timeout", route: func(w http.ResponseWriter, _ string) bool {
			time.Sleep(600 * time.Millisecond)
			return false
		}, wantShort: "timeout", wantIn: "no answer within 200ms"},
		{name: "refused", base: "refused", wantShort: "refused", wantIn: "is nginx running?"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := routechecktest.FakeProxy(t, tc.route).URL
			if tc.base == "refused" {
				base = routechecktest.RefusedURL(t)
			}
			r := routecheck.CheckRoute(context.Background(), routecheck.NewClient(), "nginx", base, "fast", 200*time.Millisecond)
			if r.Short != tc.wantShort || r.OK != (tc.wantShort == "ok") {
				t.Errorf("short %q ok %v, want %q (reason %q)", r.Short, r.OK, tc.wantShort, r.Reason)
			}
			if !strings.Contains(r.Reason, tc.wantIn) || (!r.OK && !strings.HasPrefix(r.Reason, "nginx -> fast: ")) {
				t.Errorf("reason %q lacks %q", r.Reason, tc.wantIn)
			}
		})
	}
}

// TestCheckProxyWaits: a route that only works after ~1 s passes with a
// 3 s wait and fails without one.
func TestCheckProxyWaits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		wait time.Duration
		ok   bool
	}{{0, false}, {3 * time.Second, true}} {
		t.Run(tc.wait.String(), func(t *testing.T) {
			t.Parallel()
			ready := time.Now().Add(time.Second)
			var calls atomic.Int64
			s := routechecktest.FakeProxy(t, func(w http.ResponseWriter, _ string) bool {
				calls.Add(1)
				if time.Now().Before(ready) {
					http.Error(w, "starting", http.StatusServiceUnavailable)
					return true
				}
				return false
			})
			res := routecheck.CheckProxy(context.Background(), routecheck.NewClient(), "caddy", s.URL, []string{"go", "fast"}, time.Second, tc.wait)
			for _, r := range res {
				if r.OK != tc.ok {
					t.Errorf("%s ok %v after %d calls: %s", r.Origin, r.OK, calls.Load(), r.Reason)
				}
			}
		})
	}
}
