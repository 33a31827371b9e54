package routecheck_test

import (
	"context"
	"crypto/tls"
	"net/url"
	"strings"
	"testing"
	"time"

	"proxybench/loadgen/internal/routecheck"
	"proxybench/loadgen/internal/wire/wiretest"
)

func hostPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// CheckTLS passes what negotiates as asked and fails, with a reason
// naming it, a server that falls back to HTTP/1.1 (refusing h2, or
// ignoring ALPN), refuses the version asked or presents a certificate the
// CA does not sign.
func TestCheckTLS(t *testing.T) {
	t.Parallel()
	h2 := wiretest.NewTLSServer(t, wiretest.Hello, []string{"h2", "http/1.1"}, 0, 0)
	h1only := wiretest.NewTLSServer(t, wiretest.Hello, []string{"http/1.1"}, 0, tls.VersionTLS12)
	noALPN := wiretest.NewTLSServer(t, wiretest.Hello, []string{}, 0, 0) // ignores the ALPN extension: a silent fall back
	h3 := wiretest.NewH3Server(t, wiretest.Hello)
	_, otherCA, _ := wiretest.LabCert(t)
	ctx := context.Background()
	for _, c := range []struct {
		name, addr string
		want       routecheck.TLSWant
		short      string // "ok" or the failure's
		reason     string // in the reason
	}{
		{"h2", hostPort(t, h2.URL), routecheck.TLSWant{ALPN: "h2", RootCAs: h2.Pool}, "ok", "TLS 1.3"},
		{"tls", hostPort(t, h2.URL), routecheck.TLSWant{ALPN: "http/1.1", RootCAs: h2.Pool, MinVersion: tls.VersionTLS13}, "ok", "ALPN http/1.1"},
		{"h3", hostPort(t, h3.URL), routecheck.TLSWant{ALPN: "h3", RootCAs: h3.Pool}, "ok", "ALPN h3"},
		{"h2 of an HTTP/1.1-only server", hostPort(t, h1only.URL), routecheck.TLSWant{ALPN: "h2", RootCAs: h1only.Pool}, "alpn mismatch", "does not speak"},
		{"h2 of a server ignoring ALPN", hostPort(t, noALPN.URL), routecheck.TLSWant{ALPN: "h2", RootCAs: noALPN.Pool}, "alpn mismatch", "negotiated ALPN none (TLS 1.3), not h2"},
		{"TLS 1.3 of a TLS 1.2 server", hostPort(t, h1only.URL), routecheck.TLSWant{ALPN: "http/1.1", RootCAs: h1only.Pool, MinVersion: tls.VersionTLS13}, "tls version", "TLS 1.3"},
		{"another CA", hostPort(t, h2.URL), routecheck.TLSWant{ALPN: "h2", RootCAs: otherCA}, "certificate", "does not verify"},
	} {
		r := routecheck.CheckTLS(ctx, "p", c.addr, c.want, 2*time.Second)
		if r.Short != c.short || (c.short == "ok") != r.OK || !strings.Contains(r.Reason, c.reason) {
			t.Errorf("%s: %v %q: %s; want %q with %q", c.name, r.OK, r.Short, r.Reason, c.short, c.reason)
		}
	}
}
