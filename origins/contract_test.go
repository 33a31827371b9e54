// Package origins_test holds all four origins (go, fast, node, python) to
// the one contract of origins/README.md: it builds the Go origins, starts
// every origin as a real process on a free 127.0.0.1 port and runs the same
// table against each. It needs node and python3 on PATH; PROXYBENCH_ORIGINS
// (e.g. "go fast") narrows the set. PROXYBENCH_ORIGIN_ADDRS (e.g.
// "node=127.0.0.1:9101 python=127.0.0.1:9102") tests origins already
// running instead, such as the stack's containers.
package origins_test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/lockedbuf"
)

const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// pattern is the test's own oracle for /bytes, written apart from the
// origins' code on purpose.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[i%len(alphabet)]
	}
	return b
}

type origin struct {
	name string
	base string // http://127.0.0.1:port
	addr string // 127.0.0.1:port
}

// check is one row of the contract table.
type check struct {
	name    string
	method  string
	path    string
	reqBody []byte
	reqType string
	chunked bool // send the body chunked (no Content-Length)

	status   int
	body     []byte // exact body; nil means body must be empty
	ctype    string // exact Content-Type; "" means none may be sent
	allow    string
	noLength bool // 204/304: no Content-Length may be sent
	oneLine  bool // a refusal: exactly one line
	minTime  time.Duration
	maxTime  time.Duration
}

const text = "text/plain; charset=utf-8"

func table() []check {
	mib := pattern(1 << 20)
	random := make([]byte, 1<<20)
	rand.Read(random)
	bad := func(path, body string, status int) check {
		return check{name: "bad " + path, path: path, status: status, body: []byte(body), ctype: text, oneLine: true}
	}
	ok := func(path, body string) check {
		return check{name: path, path: path, status: 200, body: []byte(body), ctype: text}
	}
	return []check{
		ok("/", "proxybench origin ok\n"),
		ok("/healthz", "ok\n"),
		ok("/?q=1", "proxybench origin ok\n"),
		{name: "/bytes/0", path: "/bytes/0", status: 200, body: nil, ctype: "application/octet-stream"},
		{name: "/bytes/1", path: "/bytes/1", status: 200, body: []byte("a"), ctype: "application/octet-stream"},
		{name: "/bytes/37", path: "/bytes/37", status: 200, body: pattern(37), ctype: "application/octet-stream"},
		{name: "/bytes/1MiB", path: "/bytes/1048576", status: 200, body: mib, ctype: "application/octet-stream"},
		{name: "HEAD /bytes/100", method: "HEAD", path: "/bytes/100", status: 200, ctype: "application/octet-stream"},
		{name: "/delay/50", path: "/delay/50", status: 200, body: []byte("delayed 50 ms\n"), ctype: text,
			minTime: 50 * time.Millisecond, maxTime: 500 * time.Millisecond},
		ok("/delay/0", "delayed 0 ms\n"),
		{name: "/status/503", path: "/status/503", status: 503, body: []byte("status 503\n"), ctype: text},
		{name: "/status/200", path: "/status/200", status: 200, body: []byte("status 200\n"), ctype: text},
		{name: "/status/599", path: "/status/599", status: 599, body: []byte("status 599\n"), ctype: text},
		{name: "/status/404", path: "/status/404", status: 404, body: []byte("status 404\n"), ctype: text},
		{name: "/status/204", path: "/status/204", status: 204, noLength: true},
		{name: "/status/304", path: "/status/304", status: 304, noLength: true},
		{name: "/status/205", path: "/status/205", status: 205, ctype: text},
		{name: "echo 1MiB random", method: "POST", path: "/echo", reqBody: random, status: 200, body: random, ctype: "application/octet-stream"},
		{name: "echo typed", method: "POST", path: "/echo", reqBody: []byte(`{"a":1}`), reqType: "application/json", status: 200, body: []byte(`{"a":1}`), ctype: "application/json"},
		{name: "echo empty", method: "POST", path: "/echo", status: 200, ctype: "application/octet-stream"},
		{name: "echo chunked", method: "POST", path: "/echo", reqBody: []byte("hello"), chunked: true,
			status: 411, body: []byte("length required: send the body with Content-Length\n"), ctype: text, oneLine: true},

		bad("/bytes/-1", `bad n "-1": want an integer 0..16777216`+"\n", 400),
		bad("/bytes/abc", `bad n "abc": want an integer 0..16777216`+"\n", 400),
		bad("/bytes/999999999999", `bad n "999999999999": want an integer 0..16777216`+"\n", 400),
		bad("/bytes/16777217", `bad n "16777217": want an integer 0..16777216`+"\n", 400),
		bad("/bytes/05", `bad n "05": want an integer 0..16777216`+"\n", 400),
		bad("/bytes/+5", `bad n "+5": want an integer 0..16777216`+"\n", 400),
		bad("/bytes/"+strings.Repeat("9", 40), `bad n "`+strings.Repeat("9", 32)+`...": want an integer 0..16777216`+"\n", 400),
		bad("/delay/abc", `bad ms "abc": want an integer 0..60000`+"\n", 400),
		bad("/delay/-5", `bad ms "-5": want an integer 0..60000`+"\n", 400),
		bad("/delay/999999", `bad ms "999999": want an integer 0..60000`+"\n", 400),
		bad("/status/42", `bad code "42": want an integer 200..599`+"\n", 400),
		bad("/status/199", `bad code "199": want an integer 200..599`+"\n", 400),
		bad("/status/600", `bad code "600": want an integer 200..599`+"\n", 400),
		bad("/nope", "not found\n", 404),
		bad("/bytes/", "not found\n", 404),
		bad("/bytes/5/", "not found\n", 404),
		bad("/bytes/5/6", "not found\n", 404),
		bad("//healthz", "not found\n", 404),
		bad("/./healthz", "not found\n", 404),
		bad("/x/../healthz", "not found\n", 404),
		bad("/he%61lthz", "not found\n", 404),
		bad("/healthz/", "not found\n", 404),
		bad("/"+strings.Repeat("a", 2000), "not found\n", 404),
		{name: "POST /", method: "POST", path: "/", status: 405, body: []byte("method not allowed\n"), ctype: text, allow: "GET, HEAD", oneLine: true},
		{name: "DELETE /bytes/5", method: "DELETE", path: "/bytes/5", status: 405, body: []byte("method not allowed\n"), ctype: text, allow: "GET, HEAD", oneLine: true},
		{name: "PUT /healthz", method: "PUT", path: "/healthz", reqBody: []byte("x"), status: 405, body: []byte("method not allowed\n"), ctype: text, allow: "GET, HEAD", oneLine: true},
		{name: "GET /echo", path: "/echo", status: 405, body: []byte("method not allowed\n"), ctype: text, allow: "POST", oneLine: true},
	}
}

func TestOrigins(t *testing.T) {
	origins := startOrigins(t)
	checks := table()
	for _, o := range origins {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}}
			t.Cleanup(client.CloseIdleConnections)
			// The group returns only when all its parallel cases are done, so
			// the liveness checks below run after every bad input.
			t.Run("table", func(t *testing.T) {
				for _, c := range checks {
					t.Run(c.name, func(t *testing.T) {
						t.Parallel()
						runCheck(t, client, o, c)
					})
				}
				t.Run("echo over 16 MiB", func(t *testing.T) { t.Parallel(); checkTooLarge(t, o) })
				t.Run("pipelined", func(t *testing.T) { t.Parallel(); checkPipelined(t, o) })
				t.Run("raw reason sanitized", func(t *testing.T) { t.Parallel(); checkSanitized(t, o) })
				t.Run("keep-alive reused 100x", func(t *testing.T) { t.Parallel(); checkKeepAlive(t, o) })
				t.Run("expect 100-continue", func(t *testing.T) { t.Parallel(); checkExpectContinue(t, o) })
				t.Run("garbage", func(t *testing.T) { t.Parallel(); sendGarbage(t, o) })
				t.Run("HTTP/1.0 closes", func(t *testing.T) { t.Parallel(); checkHTTP10(t, o) })
			})
			t.Run("still serves after bad input", func(t *testing.T) {
				runCheck(t, client, o, checks[0])
			})
			// Timing: run alone per origin, after the table's load is gone.
			t.Run("200 concurrent delay 100ms", func(t *testing.T) { checkConcurrentDelay(t, o) })
		})
	}
}

func runCheck(t *testing.T, client *http.Client, o origin, c check) {
	t.Helper()
	method := c.method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if c.reqBody != nil {
		body = bytes.NewReader(c.reqBody)
	}
	req, err := http.NewRequest(method, o.base+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.chunked {
		req.Body = io.NopCloser(bytes.NewReader(c.reqBody))
		req.ContentLength = -1
	}
	if c.reqType != "" {
		req.Header.Set("Content-Type", c.reqType)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, c.path, err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, c.path, err)
	}
	if resp.StatusCode != c.status {
		t.Errorf("status = %d, want %d (body %q)", resp.StatusCode, c.status, trim(got))
	}
	if !bytes.Equal(got, c.body) {
		t.Errorf("body = %q (%d bytes), want %q (%d bytes)", trim(got), len(got), trim(c.body), len(c.body))
	}
	if v := resp.Header.Get("X-Origin"); v != o.name {
		t.Errorf("X-Origin = %q, want %q", v, o.name)
	}
	if len(resp.TransferEncoding) > 0 {
		t.Errorf("Transfer-Encoding = %v, want Content-Length framing", resp.TransferEncoding)
	}
	cl, hasCL := resp.Header["Content-Length"]
	switch {
	case c.noLength && hasCL:
		t.Errorf("Content-Length = %v on a %d, want none", cl, c.status)
	case !c.noLength && !hasCL:
		t.Errorf("no Content-Length")
	case !c.noLength && method != http.MethodHead && cl[0] != fmt.Sprint(len(got)):
		t.Errorf("Content-Length = %s, body has %d bytes", cl[0], len(got))
	}
	if v := resp.Header.Get("Content-Type"); v != c.ctype {
		t.Errorf("Content-Type = %q, want %q", v, c.ctype)
	}
	if v := resp.Header.Get("Allow"); v != c.allow {
		t.Errorf("Allow = %q, want %q", v, c.allow)
	}
	if c.oneLine && (bytes.Count(got, []byte("\n")) != 1 || !bytes.HasSuffix(got, []byte("\n"))) {
		t.Errorf("reason %q is not exactly one line", got)
	}
	if c.minTime > 0 && (took < c.minTime || took >= c.maxTime) {
		t.Errorf("took %v, want %v <= t < %v", took, c.minTime, c.maxTime)
	}
}

// startOrigins builds the Go origins and starts the selected origins, each
// killed in t.Cleanup however the test ends.
func startOrigins(t *testing.T) []origin {
	t.Helper()
	if v := os.Getenv("PROXYBENCH_ORIGIN_ADDRS"); v != "" {
		var out []origin
		for _, f := range strings.Fields(v) {
			name, addr, ok := strings.Cut(f, "=")
			if !ok {
				t.Fatalf("PROXYBENCH_ORIGIN_ADDRS: %q is not name=host:port", f)
			}
			o := origin{name: name, base: "http://" + addr, addr: addr}
			waitHealthy(t, o)
			out = append(out, o)
		}
		return out
	}
	names := []string{"go", "fast", "node", "python"}
	if v := os.Getenv("PROXYBENCH_ORIGINS"); v != "" {
		names = strings.Fields(v)
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "proxybench/origins/go", "proxybench/origins/fast")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var out []origin
	for _, name := range names {
		var argv []string
		switch name {
		case "go", "fast":
			argv = []string{filepath.Join(dir, name)}
		case "node":
			argv = []string{"node", "node/server.js"}
		case "python":
			argv = []string{"python3", "python/server.py"}
		default:
			t.Fatalf("PROXYBENCH_ORIGINS: unknown origin %q (known: go fast node python)", name)
		}
		if _, err := exec.LookPath(argv[0]); err != nil {
			t.Fatalf("origin %s needs %s on PATH (Debian: apt-get install nodejs python3), or narrow PROXYBENCH_ORIGINS: %v", name, argv[0], err)
		}
		out = append(out, start(t, name, argv))
	}
	for _, o := range out {
		waitHealthy(t, o)
	}
	return out
}

func start(t *testing.T, name string, argv []string) origin {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(cleanEnv(), "PORT="+port, "LISTEN_ADDR=127.0.0.1")
	var logs lockedbuf.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("origin %s output:\n%s", name, logs.String())
		}
	})
	return origin{name: name, base: "http://127.0.0.1:" + port, addr: "127.0.0.1:" + port}
}

// cleanEnv drops the origin settings of the caller's environment, so the
// origins run with their own default names.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PORT=") && !strings.HasPrefix(kv, "ORIGIN_NAME=") && !strings.HasPrefix(kv, "LISTEN_ADDR=") {
			env = append(env, kv)
		}
	}
	return env
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

func waitHealthy(t *testing.T, o origin) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(o.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("origin %s not healthy at %s within 15 s: %v", o.name, o.base, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
