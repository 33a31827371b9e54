//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"

	"proxybench/internal/stack"
	"proxybench/internal/tlscert"
)

// TestTLS checks every proxy's TLS port on the running stack with Go's
// crypto/tls trusting the lab CA alone: the certificate of .cache/tls
// (the same on every proxy) verifies for 127.0.0.1 and localhost; TLS 1.3
// is negotiated (TLS 1.2 refused unless the stack runs TLS_MIN_VERSION=1.2)
// with X25519 and the same cipher suite everywhere; ALPN gives h2 when it
// is offered and http/1.1 when only that is; every origin's route answers
// 200 with its X-Origin over HTTP/2 and over HTTP/1.1; a second connection
// with a client session cache resumes; and the proxies that have HTTP/3
// answer over it on the same port (UDP) and advertise it in Alt-Svc.
func TestTLS(t *testing.T) {
	dir := filepath.Join("..", tlscert.DefaultDir)
	pool, err := tlscert.CAPool(dir)
	if err != nil {
		t.Fatalf("the lab CA (scripts/stack.sh up makes it): %v", err)
	}
	cert, err := tlscert.ReadCert(tlscert.Path(dir, tlscert.CertFile))
	if err != nil {
		t.Fatal(err)
	}
	want := tlscert.Fingerprint(cert)
	minVersion := uint16(tls.VersionTLS13)
	if os.Getenv("TLS_MIN_VERSION") == "1.2" {
		minVersion = tls.VersionTLS12
	}
	eachProxy(t, func(t *testing.T, p stack.Proxy) {
		addr := fmt.Sprintf("127.0.0.1:%d", p.TLSPort)
		for _, c := range []struct {
			serverName string
			alpn       []string
			want       string
		}{
			{"localhost", []string{"h2", "http/1.1"}, "h2"},
			{"", []string{"http/1.1"}, "http/1.1"},
		} {
			st, err := handshake(addr, &tls.Config{RootCAs: pool, ServerName: c.serverName, NextProtos: c.alpn})
			if err != nil {
				t.Fatalf("TLS to %s (server name %q, ALPN %v): %v", addr, c.serverName, c.alpn, err)
			}
			if st.Version != tls.VersionTLS13 || st.NegotiatedProtocol != c.want || st.CurveID != tls.X25519 ||
				st.CipherSuite != tls.TLS_AES_128_GCM_SHA256 {
				t.Errorf("ALPN %v: got %s, ALPN %q, curve %s, %s; want TLS 1.3, %q, X25519, TLS_AES_128_GCM_SHA256",
					c.alpn, tls.VersionName(st.Version), st.NegotiatedProtocol, st.CurveID, tls.CipherSuiteName(st.CipherSuite), c.want)
			}
			t.Logf("ALPN %v: %s, %s, %s, %q", c.alpn, tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite), st.CurveID, st.NegotiatedProtocol)
			if got := tlscert.Fingerprint(st.PeerCertificates[0]); got != want {
				t.Errorf("presents certificate %s, want %s (%s): recreate the stack (scripts/stack.sh up)", got[:12], want[:12], tlscert.CertFile)
			}
		}
		// TLS 1.2: refused by default, accepted with TLS_MIN_VERSION=1.2.
		st, err := handshake(addr, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS12})
		t.Logf("TLS 1.2 only: %s, %v", tls.CipherSuiteName(st.CipherSuite), err)
		switch {
		case minVersion == tls.VersionTLS13 && err == nil:
			t.Errorf("TLS 1.2 accepted (%s), want it refused at TLS_MIN_VERSION=1.3", tls.CipherSuiteName(st.CipherSuite))
		case minVersion == tls.VersionTLS12 && err != nil:
			t.Errorf("TLS 1.2 refused at TLS_MIN_VERSION=1.2: %v", err)
		case minVersion == tls.VersionTLS12 && st.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 && st.CipherSuite != tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256:
			t.Errorf("TLS 1.2 with %s, want ECDHE AES-128-GCM", tls.CipherSuiteName(st.CipherSuite))
		}

		for _, proto := range []string{"HTTP/2.0", "HTTP/1.1"} {
			tr := &http.Transport{
				TLSClientConfig:   &tls.Config{RootCAs: pool, ClientSessionCache: tls.NewLRUClientSessionCache(8)},
				ForceAttemptHTTP2: proto == "HTTP/2.0",
			}
			if proto == "HTTP/1.1" {
				tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
			}
			client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
			for i, o := range stack.DefaultOrigins() {
				resp := get(t, client, stack.TLSURL(p, o, "/"), proto, o)
				if resp == nil {
					continue
				}
				if i == 0 && p.HTTP3 && proto == "HTTP/2.0" {
					if alt := resp.Header.Get("Alt-Svc"); !strings.Contains(alt, fmt.Sprintf(`h3=":%d"`, p.TLSPort)) {
						t.Errorf("Alt-Svc %q, want h3 on :%d advertised", alt, p.TLSPort)
					}
				}
				t.Logf("%s %s: %s, X-Origin %s, resumed %v", proto, o, resp.Status, resp.Header.Get("X-Origin"), resp.TLS.DidResume)
				if resp.TLS.DidResume != (i > 0) {
					t.Errorf("%s request %d: DidResume %v, want %v (a new connection after the first resumes)", proto, i, resp.TLS.DidResume, i > 0)
				}
				// The next request takes a new connection: it must resume.
				tr.CloseIdleConnections()
			}
		}

		if p.HTTP3 {
			tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
			defer tr.Close()
			client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
			for _, o := range stack.DefaultOrigins() {
				if resp := get(t, client, stack.TLSURL(p, o, "/"), "HTTP/3.0", o); resp != nil {
					t.Logf("HTTP/3 %s: %s over %s, X-Origin %s", o, resp.Status, resp.Proto, resp.Header.Get("X-Origin"))
				}
			}
		}
	})
}

// eachProxy runs fn for every proxy of the stack, each a parallel subtest.
func eachProxy(t *testing.T, fn func(t *testing.T, p stack.Proxy)) {
	for _, name := range stack.DefaultProxies() {
		p, err := stack.LookupProxy(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, p)
		})
	}
}

// get asks url and wants 200 with X-Origin origin over proto; it returns
// the response (body read and closed), nil when the request failed.
func get(t *testing.T, client *http.Client, url, proto, origin string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", proto, url, err)
		return nil
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || resp.Proto != proto || resp.Header.Get("X-Origin") != origin || resp.TLS == nil {
		t.Errorf("%s %s: %s over %s, X-Origin %q, body error %v; want 200 over %s from %s",
			proto, url, resp.Status, resp.Proto, resp.Header.Get("X-Origin"), err, proto, origin)
	}
	return resp
}

// handshake makes one TLS connection and returns its state.
func handshake(addr string, cfg *tls.Config) (tls.ConnectionState, error) {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 3 * time.Second}, Config: cfg}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	return c.(*tls.Conn).ConnectionState(), nil
}
