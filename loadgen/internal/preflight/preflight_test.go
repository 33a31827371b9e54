package preflight

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/loadgen/internal/routecheck"
	"proxybench/loadgen/internal/routecheck/routechecktest"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// TestRunTable checks three proxies where traefik routes /go/ to the wrong
// origin and caddy is down: the table (golden), the named broken routes, exit 1.
func TestRunTable(t *testing.T) {
	t.Parallel()
	good := routechecktest.FakeProxy(t, nil)
	bad := routechecktest.FakeProxy(t, func(w http.ResponseWriter, o string) bool {
		if o == "go" {
			w.Header().Set("X-Origin", "python")
			io.WriteString(w, routecheck.Body)
			return true
		}
		return false
	})
	down := routechecktest.RefusedURL(t)
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
	checkGolden(t, "table.golden", strings.ReplaceAll(out.String(), strings.TrimPrefix(down, "http://"), "ADDR"))
}

// checkGolden compares got with testdata/name (-update rewrites it).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", name)
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
	s := routechecktest.FakeProxy(t, nil)
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
		{[]string{"-proto", "h1"}, 2, "-proto: protocol h1: the cleartext routes are always checked"},
		{[]string{"-proto", "tls,h4"}, 2, `-proto: protocol "h4"`},
		{[]string{"-proto", "h2", "-tls-version", "1.1"}, 2, `-tls-version: TLS version "1.1": use 1.2 or 1.3`},
		{[]string{"nginx"}, 2, `unexpected argument "nginx"`},
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
