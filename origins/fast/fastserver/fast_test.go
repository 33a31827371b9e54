package fastserver

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// memTransport feeds a connection from memory. With loop set it repeats
// in forever, one copy per Read, like a keep-alive client sending the next
// request when the answer arrived.
type memTransport struct {
	in   []byte
	off  int
	loop bool
	out  io.Writer
}

func (m *memTransport) Read(p []byte) (int, error) {
	if m.off == len(m.in) {
		if !m.loop {
			return 0, io.EOF
		}
		m.off = 0
	}
	n := copy(p, m.in[m.off:])
	m.off += n
	return n, nil
}

func (m *memTransport) Write(p []byte) (int, error)     { return m.out.Write(p) }
func (m *memTransport) SetReadDeadline(time.Time) error { return nil }

var fixedNow = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

// serveMem runs a connection over in until it closes and returns what it wrote
// and whether it closed before the input ran out.
func serveMem(in string) (out string, closedEarly bool) {
	var buf bytes.Buffer
	tr := &memTransport{in: []byte(in), out: &buf}
	c := newServer("fast", fixedNow).newConn(tr)
	for c.serveOne() {
	}
	return buf.String(), tr.off < len(tr.in) || c.r.Buffered() > 0
}

// statuses reads every answer in out, assuming no HEAD.
func statuses(t *testing.T, out string) []int {
	t.Helper()
	var got []int
	br := bufio.NewReader(strings.NewReader(out))
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return got
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("unreadable answer %d: %v\n%s", len(got), err, out)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatalf("answer %d body: %v", len(got), err)
		}
		if resp.StatusCode != 100 {
			got = append(got, resp.StatusCode)
		}
	}
}

func TestServeRaw(t *testing.T) {
	t.Parallel()
	get := "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	tests := []struct {
		name   string
		in     string
		want   []int
		closes bool   // the connection ends before the input does
		has    string // a substring the output must carry
	}{
		{name: "keep-alive", in: get + get, want: []int{200, 200}},
		{name: "bare LF", in: "GET / HTTP/1.1\nHost: x\n\n" + get, want: []int{200, 200}},
		{name: "close", in: "GET / HTTP/1.1\r\nConnection: close\r\n\r\n" + get, want: []int{200}, closes: true, has: "Connection: close\r\n"},
		{name: "close token in list", in: "GET / HTTP/1.1\r\nConnection: Upgrade, CLOSE\r\n\r\n" + get, want: []int{200}, closes: true},
		{name: "HTTP/1.0 closes", in: "GET / HTTP/1.0\r\n\r\n" + get, want: []int{200}, closes: true},
		{name: "HTTP/1.0 keep-alive", in: "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + get, want: []int{200, 200}, has: "Connection: keep-alive\r\n"},
		{name: "unwanted small body skipped", in: "GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello" + get, want: []int{200, 200}},
		{name: "unwanted big body closes", in: "GET / HTTP/1.1\r\nContent-Length: 300000\r\n\r\n" + get, want: []int{200}, closes: true},
		{name: "unwanted chunked body closes", in: "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + get, want: []int{200}, closes: true},
		{name: "expect 100-continue", in: "POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi" + get, want: []int{200, 200}, has: "HTTP/1.1 100 Continue\r\n\r\n"},
		{name: "echo too large refused from the head", in: "POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 16777217\r\n\r\n" + get, want: []int{413}, closes: true},
		{name: "echo chunked", in: "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", want: []int{411}, closes: true},
		{name: "both framings", in: "POST /echo HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" + get, want: []int{400}, closes: true},
		{name: "conflicting lengths", in: "POST /echo HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", want: []int{400}, closes: true},
		{name: "bad length", in: "POST /echo HTTP/1.1\r\nContent-Length: -1\r\n\r\n" + get, want: []int{400}, closes: true},
		{name: "unknown coding", in: "POST /echo HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n" + get, want: []int{501}, closes: true},
		{name: "obs-fold", in: "GET / HTTP/1.1\r\nX-A: 1\r\n  2\r\n\r\n" + get, want: []int{400}, closes: true},
		{name: "space before colon", in: "GET / HTTP/1.1\r\nContent-Length : 5\r\n\r\n" + get, want: []int{400}, closes: true},
		{name: "bad request line", in: "GET /\r\n\r\n" + get, want: []int{400}, closes: true},
		{name: "HTTP/2 line", in: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", want: []int{400}, closes: true},
		{name: "request line too long", in: "GET /" + strings.Repeat("a", readBufSize) + " HTTP/1.1\r\n\r\n", want: []int{414}, closes: true},
		{name: "header line too long", in: "GET / HTTP/1.1\r\nX: " + strings.Repeat("a", readBufSize) + "\r\n\r\n", want: []int{431}, closes: true},
		{name: "too many headers", in: "GET / HTTP/1.1\r\n" + strings.Repeat("X: 1\r\n", maxHeaders+1) + "\r\n", want: []int{431}, closes: true},
		{name: "control byte in header value", in: "POST /echo HTTP/1.1\r\nContent-Type: \b\r\n\r\n" + get, want: []int{400}, closes: true},
		{name: "control byte in target", in: "GET /\x01 HTTP/1.1\r\n\r\n" + get, want: []int{400}, closes: true},
		{name: "unknown method", in: "BREW / HTTP/1.1\r\n\r\n" + get, want: []int{405, 200}, has: "Allow: GET, HEAD\r\n"},
		{name: "absolute form is not routed", in: "GET http://x/ HTTP/1.1\r\n\r\n", want: []int{404}},
		{name: "truncated head", in: "GET / HTTP/1.1\r\nHost: x\r\n", want: []int{400}},
		{name: "truncated body", in: "POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc", want: nil},
		{name: "nothing", in: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, closed := serveMem(tt.in)
			got := statuses(t, out)
			if !equal(got, tt.want) {
				t.Errorf("statuses = %v, want %v\n%s", got, tt.want, out)
			}
			if closed != tt.closes {
				t.Errorf("closed before the input ended = %v, want %v", closed, tt.closes)
			}
			if !strings.Contains(out, tt.has) {
				t.Errorf("output lacks %q:\n%s", tt.has, out)
			}
			if strings.Count(out, "X-Origin: fast\r\n") != len(got) {
				t.Errorf("not every answer carries X-Origin:\n%s", out)
			}
		})
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzServe feeds arbitrary bytes to a connection: it must never panic and
// whatever it writes must be readable HTTP answers, each with X-Origin.
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /echo HTTP/1.1\r\nContent-Length: 3\r\nContent-Type: a/b\r\n\r\nabc",
		"GET /bytes/12 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		"GET /status/204 HTTP/1.1\r\n\r\nGET /delay/0?x HTTP/1.1\r\n\r\n",
		"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if strings.Contains(in, "/delay/") && !strings.Contains(in, "/delay/0 ") {
			t.Skip("real sleeps")
		}
		if strings.Contains(in, "HEAD") {
			t.Skip("HEAD answers cannot be read back without the request")
		}
		out, _ := serveMem(in)
		br := bufio.NewReader(strings.NewReader(out))
		for n := 0; ; n++ {
			if _, err := br.Peek(1); err == io.EOF {
				return
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("answer %d unreadable: %v\n%q", n, err, out)
			}
			if resp.StatusCode != 100 && resp.Header.Get("X-Origin") != "fast" {
				t.Fatalf("answer %d without X-Origin:\n%q", n, out)
			}
			io.Copy(io.Discard, resp.Body)
		}
	})
}

// The hot paths, one request per iteration over an in-memory keep-alive
// connection (one flush per answer, as with a real client).
func BenchmarkServe(b *testing.B) {
	for _, bm := range []struct{ name, req string }{
		{"GET /", "GET / HTTP/1.1\r\nHost: 127.0.0.1:9104\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n"},
		{"GET /healthz", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:9104\r\n\r\n"},
		{"GET /bytes/1024", "GET /bytes/1024 HTTP/1.1\r\nHost: 127.0.0.1:9104\r\n\r\n"},
		{"GET /status/503", "GET /status/503 HTTP/1.1\r\nHost: 127.0.0.1:9104\r\n\r\n"},
		{"POST /echo 1KiB", "POST /echo HTTP/1.1\r\nHost: 127.0.0.1:9104\r\nContent-Length: 1024\r\n\r\n" + strings.Repeat("x", 1024)},
	} {
		b.Run(bm.name, func(b *testing.B) {
			tr := &memTransport{in: []byte(bm.req), loop: true, out: io.Discard}
			c := newServer("fast", time.Now).newConn(tr)
			b.ReportAllocs()
			b.SetBytes(int64(len(bm.req)))
			for b.Loop() {
				if !c.serveOne() {
					b.Fatal("connection closed")
				}
			}
		})
	}
}
