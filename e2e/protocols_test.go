//go:build e2e

package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"proxybench/internal/stack"
	"proxybench/internal/tlscert"
)

// attackSummary is what this test reads of `loadgen attack -json`.
type attackSummary struct {
	Protocol string           `json:"protocol"`
	Requests int64            `json:"requests"`
	Late     int64            `json:"late"`
	Errors   int64            `json:"errors"`
	Reasons  map[string]int64 `json:"error_reasons"`
	Codes    map[string]int64 `json:"codes"`
	TLS      *struct {
		ALPN       string `json:"alpn"`
		Version    string `json:"version"`
		Cipher     string `json:"cipher"`
		Full       int64  `json:"handshakes_full"`
		Resumed    int64  `json:"handshakes_resumed"`
		CertErrors int64  `json:"certificate_errors"`
	} `json:"tls"`
}

// TestProtocols runs `loadgen attack` against every proxy's TLS port over
// HTTP/1.1 over TLS, HTTP/2 (4 streams per connection), and a new
// connection per request with session resumption on and off, and HTTP/3
// against the proxies that have it: every request answered 200, the
// protocol and TLS 1.3 negotiated, no certificate error, and resumed
// handshakes exactly when resumption is on. One second each, the proxies
// in parallel.
func TestProtocols(t *testing.T) {
	ca := filepath.Join("..", tlscert.DefaultDir, tlscert.CAFile)
	loadgen := bin(t, "loadgen")
	eachProxy(t, func(t *testing.T, p stack.Proxy) {
		// resumed: 1 = some handshakes resumed, -1 = none, 0 = either
		// (keep-alive: the 4 connections dial at once, before any
		// session is cached).
		type protoCase struct {
			name, proto, alpn string
			args              []string
			resumed           int
		}
		cases := []protoCase{
			{"tls", "tls", "http/1.1", nil, 0},
			{"h2", "h2", "h2", []string{"-streams", "4"}, 0},
			{"tls new-conn resume", "tls", "http/1.1", []string{"-new-conn"}, 1},
			{"tls new-conn no resume", "tls", "http/1.1", []string{"-new-conn", "-resume=false"}, -1},
			{"h2 new-conn resume", "h2", "h2", []string{"-new-conn"}, 1},
		}
		if p.HTTP3 {
			cases = append(cases, protoCase{"h3", "h3", "h3", []string{"-streams", "4"}, 0})
		}
		for _, c := range cases {
			url := stack.TLSURL(p, "fast", "/")
			args := append([]string{"attack", "-json", "-quiet", "-proto", c.proto, "-url", url, "-ca", ca,
				"-c", "4", "-d", "1s", "-expect-origin", "fast", "-timeout", "3s"}, c.args...)
			out, err := exec.Command(loadgen, args...).Output()
			if err != nil {
				t.Errorf("%s: loadgen %v: %v\n%s", c.name, args, err, out)
				continue
			}
			var s attackSummary
			if err := json.Unmarshal(out, &s); err != nil {
				t.Fatalf("%s: %v\n%s", c.name, err, out)
			}
			tl := s.TLS
			if tl == nil {
				t.Errorf("%s: no tls in the summary:\n%s", c.name, out)
				continue
			}
			t.Logf("%s: %d requests, %s, %s, %s, ALPN %q, handshakes %d full %d resumed", c.name, s.Requests, s.Protocol, tl.Version, tl.Cipher, tl.ALPN, tl.Full, tl.Resumed)
			if s.Requests == 0 || s.Errors != 0 || s.Codes["200"] != s.Requests {
				t.Errorf("%s: %d requests, codes %v, errors %v; want all 200", c.name, s.Requests, s.Codes, s.Reasons)
			}
			if s.Protocol != c.proto || tl.ALPN != c.alpn || tl.Version != "TLS 1.3" || tl.CertErrors != 0 {
				t.Errorf("%s: protocol %s, ALPN %q, %s, %d certificate errors; want %s, %q, TLS 1.3, none", c.name, s.Protocol, tl.ALPN, tl.Version, tl.CertErrors, c.proto, c.alpn)
			}
			if (c.resumed > 0 && tl.Resumed == 0) || (c.resumed < 0 && tl.Resumed != 0) {
				t.Errorf("%s: %d full, %d resumed handshakes; want resumed ones %s", c.name, tl.Full, tl.Resumed, map[int]string{1: "for every connection after the first few", -1: "never"}[c.resumed])
			}
			if c.resumed != 0 && tl.Full+tl.Resumed != s.Requests+s.Late {
				t.Errorf("%s: %d handshakes for %d requests (+%d late), want one each", c.name, tl.Full+tl.Resumed, s.Requests, s.Late)
			}
		}
	})
}
