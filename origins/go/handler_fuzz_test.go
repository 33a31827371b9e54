package main

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"proxybench/origins/internal/contract"
)

// FuzzHandler: any request net/http parses, through the go origin's own
// routing and handlers (its path parameters, path rule, echo framing). It
// never panics; every answer carries X-Origin, an answer of the contract's
// statuses, and a Content-Length equal to its body; a 400 is one line
// naming the bad value.
func FuzzHandler(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /bytes/12 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /bytes/016 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /status/204 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /status/99 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /delay/0?x=1 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /delay/60001 HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Type: a/b\r\n\r\nabc",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab",
		"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n",
		"PUT /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://x/healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET //healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /bytes/%31 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /a/../healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
		"HEAD /bytes/5 HTTP/1.0\r\n\r\n",
	} {
		f.Add(s)
	}
	h := newHandler("go")
	f.Fuzz(func(t *testing.T, raw string) {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return // net/http's server would have answered 400 itself
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if strings.Contains(req.URL.Path, "/delay/") {
			cancel() // no real sleeps: the client has left before the delay ends
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		res := rec.Result()
		body := rec.Body.String()
		if res.Header.Get("X-Origin") != "go" {
			t.Fatalf("%q: answer without X-Origin: %v", raw, res.Header)
		}
		if !rec.Flushed && rec.Body.Len() == 0 && res.Header.Get("Content-Length") == "" &&
			(strings.Contains(req.URL.Path, "/delay/") || req.Method == http.MethodPost) {
			return // the client left (cancelled delay, short echo body): nobody to answer
		}
		switch c := res.StatusCode; {
		case c == 200, c == 400, c == 404, c == 405, c == 411, c == 413:
		case strings.HasPrefix(req.URL.Path, "/status/") && c >= contract.StatusCode.Min && c <= contract.StatusCode.Max:
		default:
			t.Fatalf("%q: status %d is not one of the contract's", raw, c)
		}
		if contract.StatusHasFraming(res.StatusCode) {
			if n, err := strconv.Atoi(res.Header.Get("Content-Length")); err != nil || n != len(body) {
				t.Fatalf("%q: Content-Length %q for a %d-byte body", raw, res.Header.Get("Content-Length"), len(body))
			}
		} else if body != "" || res.Header.Get("Content-Length") != "" {
			t.Fatalf("%q: status %d with framing %q and body %q", raw, res.StatusCode, res.Header.Get("Content-Length"), body)
		}
		if res.StatusCode == 405 && res.Header.Get("Allow") == "" {
			t.Fatalf("%q: 405 without Allow", raw)
		}
		if res.StatusCode == 400 && (!strings.HasPrefix(body, "bad ") || strings.Count(body, "\n") != 1 || !strings.HasSuffix(body, "\n")) {
			t.Fatalf("%q: 400 body %q is not one line naming the bad value", raw, body)
		}
	})
}
