package gctrace

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the parser's output")

// TestGolden parses real gctrace output captured from programs built with
// several Go toolchains (testdata/README.md says how) and compares every
// line's classification and fields with the reviewed golden file.
func TestGolden(t *testing.T) {
	t.Parallel()
	logs, err := filepath.Glob("testdata/*.log")
	if err != nil || len(logs) == 0 {
		t.Fatalf("no testdata/*.log: %v", err)
	}
	for _, path := range logs {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			in, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := render(in)
			golden := strings.TrimSuffix(path, ".log") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s; rerun with -update and review the diff:\n%s", path, golden, got)
			}
		})
	}
}

func render(in []byte) []byte {
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(in))
	var c Cycle
	for sc.Scan() {
		kind, err := Parse(sc.Bytes(), &c)
		switch {
		case err != nil:
			fmt.Fprintf(&out, "%s n=%d ERR %v\n", kind, c.N, err)
		case kind == GC:
			fmt.Fprintf(&out, "gc n=%d at=%v cpu%%=%d clock=%v/%v/%v cpu=%v/%v/%v/%v/%v heap=%d/%d/%d goal=%d roots=%v stacks=%d globals=%d P=%d forced=%v leak=%v pause=%v\n",
				c.N, c.At, c.CPUPercent, c.SweepTerm, c.Mark, c.MarkTerm,
				c.CPUSweepTerm, c.CPUAssist, c.CPUBackground, c.CPUIdle, c.CPUMarkTerm,
				c.HeapStart, c.HeapEnd, c.HeapLive, c.HeapGoal, c.HasRoots, c.Stacks, c.Globals, c.Procs, c.ForcedMark, c.LeakCheck, c.Pause())
		default:
			fmt.Fprintf(&out, "%s\n", kind)
		}
	}
	return out.Bytes()
}
