package gctrace

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParse checks Parse never panics and keeps its promises on any input:
// a GC kind always comes with the cycle number found in the line, and an
// error is always a torn gc line.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"gc 2 @0.013s 72%: 9.3+1.4+0.003 ms clock, 18+0.027/1.4/0+0.006 ms cpu, 7->7->5 MB, 7 MB goal, 0 MB stacks, 0 MB globals, 2 P",
		"gc 12 @1.234s 3%: 0.017+0.41+0.12 ms clock, 0.035+0/0.16/0.22+0.25 ms cpu, 4->4->0 MB, 5 MB goal, 4 P (forced)\r",
		"gc 7 @10.500s 1% (checking for goroutine leaks): 0.050+2.5+0.060 ms clock, 0.10+0.5/1.2/3.0+0.12 ms cpu, 12->13->6 MB, 14 MB goal, 1 MB stacks, 0 MB globals, 2 P",
		"gc 1 @0.005s 32%: 6.3+1.0+0.004 ms clock, 12+0app: checkpoint 0",
		"GC forced", "scav 0 KiB work", "gc 99999999999999999999 @1s", "gc 1 @9999999999999999999.999999999999s 1%: ",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var c Cycle
		kind, err := Parse(line, &c)
		if err != nil && (kind != GC || !errors.Is(err, ErrTorn)) {
			t.Fatalf("kind %v err %v: errors only for torn gc lines", kind, err)
		}
		if kind == GC && !bytes.Contains(line, []byte("gc ")) {
			t.Fatalf("GC kind without a gc prefix in %q", line)
		}
		if kind == GC && err == nil && c.Pause() < 0 {
			t.Fatalf("negative pause %v from %q", c.Pause(), line)
		}
	})
}
