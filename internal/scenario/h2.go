package scenario

import "net/http"

// H2Streams is the streams each connection of the h2 and h3 scenarios
// carries at once: a cell of concurrency C runs C/10 connections (at least
// one) of 10 streams, so it keeps as many requests in flight as a simple
// cell of the same concurrency over a tenth of the connections.
const H2Streams = 10

// h2 multiplexes GET / as HTTP/2 streams over few TLS connections (ALPN h2).
var h2 = Scenario{
	Name:    "h2",
	About:   "GET / as HTTP/2 streams over TLS (ALPN h2): concurrency / 10 connections of 10 streams",
	Rank:    81,
	Method:  http.MethodGet,
	Path:    func(o string, _ Settings) string { return "/" + o + "/" },
	Proto:   "h2",
	Streams: H2Streams,
	Report:  tlsTable,
}

func init() { register(&h2) }
