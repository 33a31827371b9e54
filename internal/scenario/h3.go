package scenario

import "net/http"

// h3 is h2 over HTTP/3 (QUIC on the proxy's TLS port, UDP): only the
// proxies built with QUIC serve it.
var h3 = Scenario{
	Name:    "h3",
	About:   "GET / as HTTP/3 streams over QUIC (ALPN h3): concurrency / 10 connections of 10 streams",
	Rank:    86,
	Method:  http.MethodGet,
	Path:    func(o string, _ Settings) string { return "/" + o + "/" },
	Proto:   "h3",
	Streams: H2Streams,
	NA: map[string]string{
		"nginx":   "HTTP/3 came in nginx 1.25; Debian 12's nginx 1.22 has no http_v3_module",
		"haproxy": "Debian's HAProxy 2.6 is built without QUIC (OpenSSL 3.0 has no QUIC API; HAProxy needs quictls for it)",
	},
	Report: tlsTable,
}

func init() { register(&h3) }
