package runner

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/routecheck"
	"proxybench/loadgen/internal/wire/wiretest"
)

func tlsTargets(m map[string]string) routecheck.Target {
	return func(p string) (string, error) {
		if u, ok := m[p]; ok {
			return u, nil
		}
		return "", io.EOF
	}
}

func runTLS(t *testing.T, srv *wiretest.TLSServer, tlsURL string, proxy string, extra ...string) (*manifest.Manifest, int) {
	t.Helper()
	dir := t.TempDir()
	clear := fakeProxy(t, nil)
	e := env{target: targets(map[string]*httptest.Server{proxy: clear}), tlsTarget: tlsTargets(map[string]string{proxy: tlsURL}),
		tlsDir: filepath.Dir(srv.CAFile), docker: noDocker, clock: &sleeper{}}
	code := run(context.Background(), args(t, dir, append([]string{"-tier", "1s", "-proxies", proxy, "-origins", "fast", "-concurrency", "10"}, extra...)...),
		io.Discard, io.Discard, testLog(t), e)
	m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	return m, code
}

// The TLS scenarios go to the TLS port, speak their protocol, record what
// was negotiated, and resume sessions only where they should.
func TestTLSScenariosRun(t *testing.T) {
	t.Parallel()
	srv := wiretest.NewTLSServer(t, origin, []string{"h2", "http/1.1"}, 0, 0)
	m, code := runTLS(t, srv, srv.URL, "nginx", "-scenarios", "tls,h2,tls-handshake")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	byName := map[string]manifest.Cell{}
	for _, c := range m.Cells {
		if c.Status != manifest.CellOK {
			t.Fatalf("cell %s %s: %s", c.ID, c.Status, c.Reason)
		}
		byName[c.Scenario] = c
	}
	for sc, alpn := range map[string]string{"tls": "http/1.1", "h2": "h2", "tls-handshake-full": "http/1.1", "tls-handshake-resumed": "http/1.1"} {
		c := byName[sc]
		tl := c.TLS
		if tl == nil || tl.ALPN != alpn || tl.Version != "TLS 1.3" || tl.Cipher == "" || tl.CertErrors != 0 || c.Requests == 0 || c.Errors != 0 {
			t.Errorf("%s: protocol %q TLS %+v, %d requests %d errors", sc, c.Protocol, tl, c.Requests, c.Errors)
			continue
		}
		switch sc {
		case "h2":
			if c.Protocol != "h2" || tl.HandshakesFull+tl.HandshakesResumed != 1 {
				t.Errorf("h2: %q, %+v: one connection of 10 streams", c.Protocol, tl)
			}
		case "tls":
			if n := tl.HandshakesFull + tl.HandshakesResumed; n < 1 || n > 10 {
				t.Errorf("tls: %d handshakes on 10 keep-alive connections", n)
			}
		case "tls-handshake-full":
			if tl.HandshakesResumed != 0 || tl.HandshakesFull < c.Requests {
				t.Errorf("full: %+v for %d requests", tl, c.Requests)
			}
		case "tls-handshake-resumed":
			if tl.HandshakesFull > 10 || tl.HandshakesResumed < c.Requests-10 {
				t.Errorf("resumed: %+v for %d requests", tl, c.Requests)
			}
		}
		// The manifest records the exact handshake times of each kind.
		if l := tl.LatencyFull; tl.HandshakesFull > 0 && (l == nil || l.Count != tl.HandshakesFull || l.P50 <= 0 || l.P99 < l.P50) {
			t.Errorf("%s: %d full handshakes, latency %+v", sc, tl.HandshakesFull, l)
		}
		if l := tl.LatencyResumed; (tl.HandshakesResumed == 0) != (l == nil) || (l != nil && (l.Count != tl.HandshakesResumed || l.P50 <= 0 || l.P99 < l.P50)) {
			t.Errorf("%s: %d resumed handshakes, latency %+v", sc, tl.HandshakesResumed, l)
		}
	}
}

// A proxy whose TLS port falls back to HTTP/1.1 fails h2's preflight (the
// run exits 3), and its tls cells still run; the custom proxy serving no
// TLS is not applicable.
func TestTLSPreflight(t *testing.T) {
	t.Parallel()
	h1 := wiretest.NewTLSServer(t, origin, []string{"http/1.1"}, 0, 0)
	m, code := runTLS(t, h1, h1.URL, "nginx", "-scenarios", "tls,h2")
	if code != 3 {
		t.Errorf("exit %d, want 3 (a broken route)", code)
	}
	for _, c := range m.Cells {
		switch c.Scenario {
		case "tls":
			if c.Status != manifest.CellOK {
				t.Errorf("tls: %s %s", c.Status, c.Reason)
			}
		case "h2":
			if c.Skip == nil || c.Skip.Kind != manifest.SkipPreflight || !strings.Contains(c.Reason, "ALPN") {
				t.Errorf("h2 of a server without h2: %s %+v", c.Status, c.Skip)
			}
		}
	}
	l := listenLocal(t) // accepts nothing: no TLS listener behind it
	l.Close()
	m, code = runTLS(t, h1, "https://"+l.Addr().String(), "custom", "-scenarios", "tls")
	if c := m.Cells[0]; code != 0 || c.Skip == nil || c.Skip.Kind != manifest.SkipNotApplicable || !strings.Contains(c.Reason, "custom proxy") {
		t.Errorf("custom without TLS: exit %d, %s %+v", code, c.Status, c.Skip)
	}
}
