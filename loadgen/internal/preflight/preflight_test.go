package preflight

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// fakeProxy is a real HTTP server standing in for a proxy: it answers
// /<origin>/ the way the origin behind a working proxy does; route lets a
// test break one route.
func fakeProxy(t *testing.T, route func(w http.ResponseWriter, origin string) bool) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if route != nil && route(w, origin) {
			return
		}
		w.Header().Set("X-Origin", origin)
		io.WriteString(w, Body)
	}))
	t.Cleanup(s.Close)
	return s
}

// refusedURL is a 127.0.0.1 address nothing listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

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
			io.WriteString(w, Body)
			return true
		}, wantShort: "wrong origin", wantIn: `X-Origin "node", want "fast"`},
		{name: "no x-origin", route: func(w http.ResponseWriter, _ string) bool {
			io.WriteString(w, Body)
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
			base := fakeProxy(t, tc.route).URL
			if tc.base == "refused" {
				base = refusedURL(t)
			}
			r := CheckRoute(context.Background(), NewClient(), "nginx", base, "fast", 200*time.Millisecond)
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
			s := fakeProxy(t, func(w http.ResponseWriter, _ string) bool {
				calls.Add(1)
				if time.Now().Before(ready) {
					http.Error(w, "starting", http.StatusServiceUnavailable)
					return true
				}
				return false
			})
			res := CheckProxy(context.Background(), NewClient(), "caddy", s.URL, []string{"go", "fast"}, time.Second, tc.wait)
			for _, r := range res {
				if r.OK != tc.ok {
					t.Errorf("%s ok %v after %d calls: %s", r.Origin, r.OK, calls.Load(), r.Reason)
				}
			}
		})
	}
}

// TestRunTable checks three proxies where traefik routes /go/ to the wrong
// origin and caddy is down: the table (golden), the named broken routes, exit 1.
func TestRunTable(t *testing.T) {
	t.Parallel()
	good := fakeProxy(t, nil)
	bad := fakeProxy(t, func(w http.ResponseWriter, o string) bool {
		if o == "go" {
			w.Header().Set("X-Origin", "python")
			io.WriteString(w, Body)
			return true
		}
		return false
	})
	down := refusedURL(t)
	targets := map[string]string{"nginx": good.URL, "traefik": bad.URL, "caddy": down}
	var out, errOut bytes.Buffer
	code := Run(context.Background(), Options{
		Proxies: []string{"nginx", "traefik", "caddy"}, Origins: []string{"go", "fast"}, Timeout: time.Second,
		Target: func(p string) (string, error) { return targets[p], nil },
	}, &out, &errOut)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if want := "broken routes: traefik/go, caddy/go, caddy/fast"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr %q lacks %q", errOut.String(), want)
	}
	got := strings.ReplaceAll(out.String(), strings.TrimPrefix(down, "http://"), "ADDR")
	golden := filepath.Join("testdata", "table.golden")
	if *update {
		os.WriteFile(golden, []byte(got), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil || got != string(want) {
		t.Errorf("output differs from %s (go test -update to accept):\n%s", golden, got)
	}
}

func TestRunAllOK(t *testing.T) {
	t.Parallel()
	s := fakeProxy(t, nil)
	var out bytes.Buffer
	code := Run(context.Background(), Options{Proxies: []string{"nginx", "haproxy"}, Origins: []string{"node", "python", "go", "fast"},
		Timeout: time.Second, Target: func(string) (string, error) { return s.URL, nil }}, &out, io.Discard)
	if code != 0 || !strings.Contains(out.String(), "all 8 routes ok") {
		t.Errorf("exit %d\n%s", code, out.String())
	}
}

func TestMainFlags(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-proxies", "envoy"}, 2, `unknown proxy "envoy"`},
		{[]string{"-origins", "rust"}, 2, `unknown origin "rust"`},
		{[]string{"-bogus"}, 2, "flag provided but not defined"},
		{[]string{"-h"}, 0, "-wait long"},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			t.Parallel()
			var errOut bytes.Buffer
			if code := Main(context.Background(), tc.args, io.Discard, &errOut, log); code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr %q lacks %q", errOut.String(), tc.want)
			}
		})
	}
}
