package preflight

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"proxybench/loadgen/internal/routecheck/routechecktest"
	"proxybench/loadgen/internal/wire"
	"proxybench/loadgen/internal/wire/wiretest"
)

// pool trusts the lab CAs of every server (each makes its own).
func pool(t *testing.T, caFiles ...string) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	for _, f := range caFiles {
		pem, err := os.ReadFile(f)
		if err != nil || !p.AppendCertsFromPEM(pem) {
			t.Fatalf("CA %s: %v", f, err)
		}
	}
	return p
}

// TestRunTLS checks the TLS ports of real local TLS servers: one
// negotiating both ALPN IDs passes, one offering only http/1.1 fails h2,
// one ignoring ALPN (a silent fall back) fails both, one capped at TLS 1.2
// fails a TLS 1.3 check, and the custom proxy serving nothing on its TLS
// port is n/a; the table (golden), the reasons naming the proxy, what was
// asked and what was negotiated, exit 1.
func TestRunTLS(t *testing.T) {
	t.Parallel()
	both := wiretest.NewTLSServer(t, wiretest.Hello, []string{"h2", "http/1.1"}, 0, 0)
	h1only := wiretest.NewTLSServer(t, wiretest.Hello, []string{"http/1.1"}, 0, 0)
	noALPN := wiretest.NewTLSServer(t, wiretest.Hello, []string{}, 0, 0)
	tls12 := wiretest.NewTLSServer(t, wiretest.Hello, []string{"h2", "http/1.1"}, 0, tls.VersionTLS12)
	refused := "https://" + strings.TrimPrefix(routechecktest.RefusedURL(t), "http://")
	tlsTargets := map[string]string{"nginx": both.URL, "haproxy": h1only.URL, "traefik": noALPN.URL, "caddy": tls12.URL, "custom": refused}
	clear := routechecktest.FakeProxy(t, nil)
	var out, errOut bytes.Buffer
	code := Run(context.Background(), Options{
		Proxies: []string{"nginx", "haproxy", "traefik", "caddy", "custom"}, Origins: []string{"fast"}, Timeout: time.Second,
		Target:    func(string) (string, error) { return clear.URL, nil },
		TLSTarget: func(p string) (string, error) { return tlsTargets[p], nil },
		Protos:    []wire.Proto{wire.ProtoTLS, wire.ProtoH2}, TLSVersion: "1.3",
		RootCAs: pool(t, both.CAFile, h1only.CAFile, noALPN.CAFile, tls12.CAFile),
	}, &out, &errOut)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if want := "broken TLS ports: haproxy/h2, traefik/tls, traefik/h2, caddy/tls, caddy/h2"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr %q lacks %q", errOut.String(), want)
	}
	got := out.String()
	for name, u := range map[string]string{"NGINX": both.URL, "HAPROXY": h1only.URL, "TRAEFIK": noALPN.URL, "CADDY": tls12.URL, "CUSTOM": refused} {
		got = strings.ReplaceAll(got, strings.TrimPrefix(u, "https://"), name)
	}
	checkGolden(t, "tls.golden", got)
}

// TestRunTLSH3: a proxy the support matrix says has no HTTP/3 is n/a with
// its reason and never dialled; one that serves it passes.
func TestRunTLSH3(t *testing.T) {
	t.Parallel()
	h3 := wiretest.NewH3Server(t, wiretest.Hello)
	clear := routechecktest.FakeProxy(t, nil)
	var out bytes.Buffer
	code := Run(context.Background(), Options{
		Proxies: []string{"haproxy", "caddy"}, Origins: []string{"fast"}, Timeout: 2 * time.Second,
		Target:    func(string) (string, error) { return clear.URL, nil },
		TLSTarget: func(p string) (string, error) { return map[string]string{"caddy": h3.URL}[p], nil },
		Protos:    []wire.Proto{wire.ProtoH3}, RootCAs: h3.Pool,
	}, &out, io.Discard)
	if code != 0 {
		t.Errorf("exit %d, want 0\n%s", code, out.String())
	}
	for _, want := range []string{"haproxy  n/a", "caddy    ok", "not applicable:\n  haproxy h3: Debian's HAProxy 2.6 is built without QUIC",
		"TLS 1.2 or 1.3", "all 2 TLS checks ok (1 n/a)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
