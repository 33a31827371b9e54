package logsource

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

type lines struct {
	got []string
}

func (l *lines) Line(_ time.Time, b []byte) { l.got = append(l.got, string(b)) }
func (l *lines) Reset()                     { l.got = append(l.got, "<reset>") }

func TestReaderSplitsAnyChunking(t *testing.T) {
	t.Parallel()
	in := "gc 1 @0.001s 1%: a\r\nscav 0\n\nlast without newline"
	want := []string{"gc 1 @0.001s 1%: a\r", "scav 0", "", "last without newline"}
	for _, tc := range []struct {
		name string
		half bool
	}{{name: "whole"}, {name: "one byte at a time", half: true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var l lines
			r := iotestReader(in, tc.half)
			if err := Reader(context.Background(), r, time.Now, &l); err != nil {
				t.Fatal(err)
			}
			if strings.Join(l.got, "|") != strings.Join(want, "|") {
				t.Errorf("got %q, want %q", l.got, want)
			}
		})
	}
}

func iotestReader(s string, oneByte bool) interface{ Read([]byte) (int, error) } {
	if oneByte {
		return iotest.OneByteReader(strings.NewReader(s))
	}
	return strings.NewReader(s)
}

func TestSplitterCapsLongLines(t *testing.T) {
	t.Parallel()
	var sp splitter
	var n []int
	emit := func(b []byte) { n = append(n, len(b)) }
	// Waiting for a newline that does not come: cut once MaxLine is held.
	sp.write([]byte(strings.Repeat("x", MaxLine-10)), emit)
	sp.write([]byte(strings.Repeat("x", 20)), emit)
	sp.write([]byte("yy\n"), emit)
	if len(n) != 2 || n[0] != MaxLine+10 || n[1] != 2 {
		t.Errorf("line lengths %v, want a cut at %d", n, MaxLine)
	}
}

// TestFollowFile appends to a real file, writes a partial line, then
// truncates it as a restarted program redirecting with > would.
func TestFollowFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gc.log")
	if err := os.WriteFile(path, []byte("gc 1 @0.1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sink := &syncLines{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- FollowFile(ctx, path, 10*time.Millisecond, time.Now, sink) }()

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, sink, "gc 1 @0.1s")
	f.WriteString("gc 2 @0.")
	time.Sleep(50 * time.Millisecond)
	f.WriteString("2s\n")
	waitFor(t, sink, "gc 1 @0.1s|gc 2 @0.2s")
	f.Close()
	if err := os.WriteFile(path, []byte("gc 1 @0.05s\n"), 0o644); err != nil { // truncate: new process
		t.Fatal(err)
	}
	waitFor(t, sink, "gc 1 @0.1s|gc 2 @0.2s|<reset>|gc 1 @0.05s")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestFollowFileMissing(t *testing.T) {
	t.Parallel()
	err := FollowFile(context.Background(), "/nonexistent/gc.log", time.Second, time.Now, &lines{})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/gc.log") {
		t.Errorf("err = %v, want it to name the file", err)
	}
}
