package scenario

import "fmt"

// The h2-payload pair: the payload family's 64 KiB and 1 MiB bodies as
// HTTP/2 streams (h2's connections x streams), where the proxies' flow
// control windows (each proxy's default) pace the bodies.
var (
	h2Payload64k = h2PayloadScenario("h2-payload-64k", 84, 64<<10)
	h2Payload1m  = h2PayloadScenario("h2-payload-1m", 85, 1<<20)
)

func init() {
	register(&h2Payload64k)
	register(&h2Payload1m)
}

// H2PayloadGroup is the group of the HTTP/2 payload scenarios.
const H2PayloadGroup = "h2-payload"

func h2PayloadScenario(name string, rank int, n int64) Scenario {
	s := payloadScenario(name, rank, n)
	s.About = fmt.Sprintf("GET /bytes/%d over HTTP/2 (ALPN h2, concurrency / 10 connections of 10 streams): a %s response body", n, humanBytes(n))
	s.Groups = []string{H2PayloadGroup}
	s.Proto, s.Streams = "h2", H2Streams
	return s
}
