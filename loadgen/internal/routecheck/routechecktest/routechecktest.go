// Package routechecktest holds the test doubles of route checks: a fake
// proxy answering like a working route and an address that refuses.
package routechecktest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"proxybench/loadgen/internal/routecheck"
)

// FakeProxy is a real HTTP server standing in for a proxy: it answers
// /<origin>/ the way the origin behind a working proxy does; route lets a
// test break one route.
func FakeProxy(t testing.TB, route func(w http.ResponseWriter, origin string) bool) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if route != nil && route(w, origin) {
			return
		}
		w.Header().Set("X-Origin", origin)
		io.WriteString(w, routecheck.Body)
	}))
	t.Cleanup(s.Close)
	return s
}

// RefusedURL is a 127.0.0.1 address nothing listens on.
func RefusedURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}
