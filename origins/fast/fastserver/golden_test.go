package fastserver

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// TestTranscriptGolden pins the exact bytes fast writes for one pipelined
// connection through every route (fixed clock). Run with -update after a
// deliberate change and review the diff.
func TestTranscriptGolden(t *testing.T) {
	t.Parallel()
	in := "GET / HTTP/1.1\r\nHost: x\r\n\r\n" +
		"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /bytes/40?x=1 HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /bytes/abc HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /delay/0 HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /delay/60001 HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /status/418 HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /status/204 HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /status/205 HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /status/42 HTTP/1.1\r\nHost: x\r\n\r\n" +
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: text/x-test\r\nContent-Length: 5\r\n\r\nhello" +
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" +
		"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n" +
		"DELETE /bytes/1 HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET //healthz HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
	got, _ := serveMem(in)
	path := filepath.Join("testdata", "transcript.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("transcript differs from %s (rerun with -update if intended):\ngot:\n%s", path, got)
	}
}
