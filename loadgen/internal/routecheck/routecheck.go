// Package routecheck owns proving that a proxy reaches an origin: one GET
// per route checking status, body and the X-Origin header, retried while a
// stack starts. `loadgen preflight` prints its results as a table; the
// runner uses CheckProxy to skip the cells of a broken route and CheckRoute
// to tell a broken route from a slow one after a cell. CheckTLS proves a
// proxy's TLS port negotiates what a cell asks (certificate, version,
// ALPN), so a proxy that falls back to HTTP/1.1 fails before it is
// measured.
package routecheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"proxybench/internal/stack"
)

// Body is what every origin answers to GET / (the origin contract).
const Body = "proxybench origin ok\n"

// Result is the state of one route.
type Result struct {
	Proxy, Origin, URL string
	OK                 bool
	Short              string // table cell: ok, refused, timeout, status 502, wrong origin, bad body, ...
	Reason             string // one line saying what is wrong and what it means
}

// Target maps a proxy name to the base URL of its traffic port.
type Target func(proxy string) (string, error)

// StackTarget is the real stack: http://127.0.0.1:<port of the proxy>.
func StackTarget(proxy string) (string, error) {
	p, err := stack.LookupProxy(proxy)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("http://127.0.0.1:%d", p.Port), nil
}

// StackDirectTarget is the real stack's origins on their own host ports
// (stack.Direct): origin -> http://127.0.0.1:<port of the origin>.
func StackDirectTarget(origin string) (string, error) {
	o, err := stack.LookupOrigin(origin)
	if err != nil {
		return "", err
	}
	return stack.DirectURL(o), nil
}

// NewClient is the client of the checks: no environment proxy (traffic
// must go straight to 127.0.0.1) and no keep-alive, so each check opens a
// fresh connection and a proxy that stopped accepting is noticed.
func NewClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true, DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect is a broken route, not something to follow
		},
	}
}

// CheckRoute sends GET <base>/<origin>/ and checks the answer; for the
// direct control (stack.Direct, base the origin's own port) GET <base>/.
func CheckRoute(ctx context.Context, c *http.Client, proxy, base, origin string, timeout time.Duration) Result {
	r := Result{Proxy: proxy, Origin: origin, URL: base + "/" + origin + "/"}
	if stack.IsDirect(proxy) {
		r.URL = base + "/"
	}
	fail := func(short, format string, a ...any) Result {
		r.Short, r.Reason = short, fmt.Sprintf("%s -> %s: ", proxy, origin)+fmt.Sprintf(format, a...)
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		return fail("bad url", "%v", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		short := transportShort(err)
		switch short {
		case "refused":
			return fail(short, "connection refused at %s: is %s running? (make up)", base, proxy)
		case "timeout":
			return fail(short, "no answer within %s from %s", timeout, r.URL)
		}
		return fail(short, "GET %s: %v", r.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return fail(transportShort(err), "reading the body of %s: %v", r.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Sprintf("status %d", resp.StatusCode), "status %d, want 200 (%s): check the proxy's route /%s/ and that origin %s is up",
			resp.StatusCode, firstLine(body), origin, origin)
	}
	if got := resp.Header.Get("X-Origin"); got != origin {
		if got == "" {
			return fail("no X-Origin", "response lacks X-Origin: the proxy answered itself or stripped the header")
		}
		return fail("wrong origin", "X-Origin %q, want %q: the proxy routes /%s/ to the wrong origin", got, origin, origin)
	}
	if string(body) != Body {
		return fail("bad body", "body %q, want %q", firstLine(body), Body)
	}
	r.OK, r.Short = true, "ok"
	return r
}

// CheckProxy checks the proxy's routes to every origin, retrying the broken
// ones (Retry: a stack that is still starting answers with refusals or
// 502s for a while).
func CheckProxy(ctx context.Context, c *http.Client, proxy, base string, origins []string, timeout, wait time.Duration) []Result {
	return Retry(ctx, len(origins), wait, func(i int) Result { return CheckRoute(ctx, c, proxy, base, origins[i], timeout) })
}

// Retry runs the checks check(0) .. check(n-1), then the failed ones
// again every 500 ms until they all pass or wait has elapsed.
func Retry(ctx context.Context, n int, wait time.Duration, check func(i int) Result) []Result {
	out := make([]Result, n)
	deadline := time.Now().Add(wait)
	for {
		broken := 0
		for i := range out {
			if !out[i].OK {
				out[i] = check(i)
			}
			if !out[i].OK {
				broken++
			}
		}
		if broken == 0 || ctx.Err() != nil || !time.Now().Add(500*time.Millisecond).Before(deadline) {
			return out
		}
		select {
		case <-ctx.Done():
			return out
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func transportShort(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "error"
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' || i >= 120 {
			return string(b[:i])
		}
	}
	return string(b)
}
