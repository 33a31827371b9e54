package origins_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"
)

// checkTooLarge announces a body over the limit and sends none of it: the
// origin must refuse from the head alone.
func checkTooLarge(t *testing.T, o origin) {
	resp := rawExchange(t, o, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 16777217\r\n\r\n", 1)[0]
	want := "body too large: want at most 16777216 bytes\n"
	if resp.status != 413 || resp.body != want || resp.origin != o.name {
		t.Errorf("got %d %q X-Origin %q, want 413 %q X-Origin %q", resp.status, resp.body, resp.origin, want, o.name)
	}
}

// checkSanitized sends bytes a client library would escape: the reason
// must repeat them as '?', never raw. A byte outside ASCII may instead be
// refused by the server's HTTP parser (node's is strict); either way it is a
// one-line 400 that does not carry the raw byte.
func checkSanitized(t *testing.T, o origin) {
	resp := rawExchange(t, o, "GET /bytes/a\"b\\c HTTP/1.1\r\nHost: x\r\n\r\n", 1)[0]
	want := `bad n "a?b?c": want an integer 0..16777216` + "\n"
	if resp.status != 400 || resp.body != want {
		t.Errorf("got %d %q, want 400 %q", resp.status, resp.body, want)
	}
	resp = rawExchange(t, o, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: a\x01b\r\nContent-Length: 0\r\n\r\n", 1)[0]
	if resp.status != 400 {
		t.Errorf("control byte in Content-Type: got %d %q, want 400", resp.status, resp.body)
	}
	resp = rawExchange(t, o, "GET /bytes/a\xff HTTP/1.1\r\nHost: x\r\n\r\n", 1)[0]
	if resp.status != 400 || strings.Contains(resp.body, "\xff") || strings.Count(resp.body, "\n") > 1 {
		t.Errorf("got %d %q, want 400 and a one-line reason without the raw byte", resp.status, resp.body)
	}
}

// checkExpectContinue: an echo the origin will read gets "100 Continue"
// and then its answer; one it refuses gets the refusal, with no 100 first.
func checkExpectContinue(t *testing.T, o origin) {
	c, err := net.DialTimeout("tcp", o.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 100 {
		t.Fatalf("before the body: %v, %v; want 100 Continue", resp, err)
	}
	io.WriteString(c, "ping")
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "ping" {
		t.Errorf("echo after 100: %d %q", resp.StatusCode, body)
	}

	got := rawExchange(t, o, "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 16777217\r\n\r\n", 1)[0]
	if got.status != 413 {
		t.Errorf("too large with Expect: got %d %q first, want 413", got.status, got.body)
	}
}

// checkPipelined writes three requests at once and wants three answers in
// order on the same connection.
func checkPipelined(t *testing.T, o origin) {
	reqs := "GET / HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /bytes/5 HTTP/1.1\r\nHost: x\r\n\r\n" +
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyz" +
		"GET /delay/1 HTTP/1.1\r\nHost: x\r\n\r\n"
	got := rawExchange(t, o, reqs, 4)
	want := []string{"proxybench origin ok\n", "abcde", "xyz", "delayed 1 ms\n"}
	for i, r := range got {
		if r.status != 200 || r.body != want[i] {
			t.Errorf("answer %d: %d %q, want 200 %q", i, r.status, r.body, want[i])
		}
	}
}

// checkHTTP10 wants an HTTP/1.0 request without keep-alive answered and
// the connection closed.
func checkHTTP10(t *testing.T, o origin) {
	c, err := net.DialTimeout("tcp", o.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET / HTTP/1.0\r\n\r\n")
	all, err := io.ReadAll(c) // ends only if the origin closes
	if err != nil {
		t.Fatalf("origin kept an HTTP/1.0 connection open: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(all)), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "proxybench origin ok\n" {
		t.Errorf("got %d %q", resp.StatusCode, body)
	}
}

// sendGarbage throws malformed bytes at the origin; whatever it answers,
// the "still serves" check after the table proves it survived.
func sendGarbage(t *testing.T, o origin) {
	for _, g := range []string{
		"\x00\x01\x02\r\n\r\n",
		"GET\r\n\r\n",
		"GET / HTTP/9.9\r\n\r\n",
		"GET / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: " + strings.Repeat("9", 5000) + "\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 1000)+"\r\n", 200) + "\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nshort",
	} {
		c, err := net.DialTimeout("tcp", o.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(time.Second))
		io.WriteString(c, g)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		io.Copy(io.Discard, c)
		c.Close()
	}
}

type rawResponse struct {
	status int
	origin string
	body   string
}

func rawExchange(t *testing.T, o origin, reqs string, n int) []rawResponse {
	t.Helper()
	c, err := net.DialTimeout("tcp", o.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, reqs); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var out []rawResponse
	for i := range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("answer %d body: %v", i, err)
		}
		out = append(out, rawResponse{resp.StatusCode, resp.Header.Get("X-Origin"), string(b)})
	}
	return out
}

func checkKeepAlive(t *testing.T, o origin) {
	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	reused := 0
	for i := range 100 {
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			if info.Reused {
				reused++
			}
		}}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", o.base+"/", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if reused != 99 {
		t.Errorf("%d of 100 requests reused the connection, want 99", reused)
	}
}

// timingMu runs the concurrency checks one origin at a time: four origins
// opening 200 connections each at once on a 2-core machine would measure
// the machine, not the origin.
var timingMu sync.Mutex

func checkConcurrentDelay(t *testing.T, o origin) {
	timingMu.Lock()
	defer timingMu.Unlock()
	const n = 200
	tr := &http.Transport{MaxIdleConnsPerHost: n}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(o.base + "/delay/100")
			if err != nil {
				errs <- err
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != "delayed 100 ms\n" {
				errs <- fmt.Errorf("got %d %q", resp.StatusCode, b)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d concurrent /delay/100 took %v", n, took)
	// Served one at a time they would take 20 s; 1.5 s leaves room for a
	// loaded 2-core machine opening 200 connections at once.
	if took > 1500*time.Millisecond {
		t.Errorf("%d concurrent /delay/100 took %v, want about 1 s at most", n, took)
	}
}

func trim(b []byte) []byte {
	if len(b) > 80 {
		return append(b[:80:80], "..."...)
	}
	return b
}
