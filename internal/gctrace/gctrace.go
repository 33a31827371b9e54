// Package gctrace owns reading the Go runtime's GODEBUG=gctrace=1 output:
// one line in, one classified and parsed line out, without allocating.
// It knows the formats of Go 1.16 through 1.26 (stacks and globals from
// 1.18, Go 1.26's " (checking for goroutine leaks)"), the "GC forced" line
// of the periodic GC, scavenger lines, and gc lines torn apart by other
// output written to stderr at the same moment.
package gctrace

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// Kind classifies a line.
type Kind uint8

// Kinds of line.
const (
	Other  Kind = iota // anything else the program wrote
	GC                 // a gc line; Cycle.N is valid even when Parse errs
	Forced             // "GC forced": the next cycle is the periodic forced GC
	Scav               // a scavenger line ("scav ..." or the old "scvg...")
	// TornForced is the " (forced)" mark of a gc line another writer tore
	// apart, at the start of a line of its own (after the line's last
	// fragment, e.g. "2 P", when that stayed with it): the runtime prints
	// the mark as one piece, and another writer's whole lines only ever
	// follow it. The cycle it ends was forced, though its number may be
	// lost with the torn head.
	TornForced
)

func (k Kind) String() string {
	switch k {
	case GC:
		return "gc"
	case Forced:
		return "forced"
	case Scav:
		return "scav"
	case TornForced:
		return "torn-forced"
	}
	return "other"
}

// Cycle is one GC cycle as gctrace reports it. Times are exact to the
// runtime's printed precision; heap sizes are the runtime's "MB", which are
// MiB (it prints bytes>>20).
type Cycle struct {
	N          uint64        // cycle number, 1 for a process's first cycle
	At         time.Duration // cycle start since the process started
	CPUPercent int           // GC's share of CPU since the process started

	// Wall clock phases.
	SweepTerm time.Duration // stop-the-world sweep termination
	Mark      time.Duration // concurrent mark and scan
	MarkTerm  time.Duration // stop-the-world mark termination

	// CPU time phases.
	CPUSweepTerm  time.Duration
	CPUAssist     time.Duration // mutator assists during mark
	CPUBackground time.Duration // dedicated + fractional mark workers
	CPUIdle       time.Duration // idle mark workers
	CPUMarkTerm   time.Duration

	HeapStart, HeapEnd, HeapLive, HeapGoal uint64 // bytes
	Stacks, Globals                        uint64 // bytes scanned; zero before Go 1.18
	HasRoots                               bool   // stacks and globals were printed (Go >= 1.18)
	Procs                                  int    // GOMAXPROCS
	ForcedMark                             bool   // " (forced)": runtime.GC() or debug.FreeOSMemory
	LeakCheck                              bool   // Go 1.26 goroutine leak check cycle
}

// Pause is the stop-the-world time: sweep termination plus mark termination.
func (c *Cycle) Pause() time.Duration { return c.SweepTerm + c.MarkTerm }

// CPU is the CPU the cycle cost the program: every phase but the idle
// mark workers (CPUIdle), which run only on processors that had nothing
// else to do and so take no CPU from its goroutines. Counted in, they made
// a proxy with idle processors look as if GC cost it more than one that
// was busy.
func (c *Cycle) CPU() time.Duration {
	return c.CPUSweepTerm + c.CPUAssist + c.CPUBackground + c.CPUMarkTerm
}

// ErrTorn reports a gc line whose cycle number was read but whose rest was
// cut off or interleaved with other output.
var ErrTorn = errors.New("torn gc line")

var (
	gcPrefix   = []byte("gc ")
	leakCheck  = []byte(" (checking for goroutine leaks)")
	forcedMark = []byte(" (forced)")
)

// Parse classifies one line (without its newline; a trailing CR or spaces
// are ignored) and, for a gc line, parses it into c. A gc line may start
// anywhere in the line because another writer may have put text before it.
// For a gc line that does not parse to the end, Parse returns kind GC,
// c.N set, the fields it did read, and an error wrapping ErrTorn.
func Parse(line []byte, c *Cycle) (Kind, error) {
	line = bytes.TrimRight(line, " \r\n\t")
	*c = Cycle{}
	off := 0
	for {
		i := bytes.Index(line[off:], gcPrefix)
		if i < 0 {
			break
		}
		start := off + i
		if n, rest, ok := cycleHead(line[start+len(gcPrefix):]); ok {
			c.N = n
			p := parser{b: rest}
			if err := p.cycle(c); err != nil {
				return GC, fmt.Errorf("%w: cycle %d: %s at %q", ErrTorn, n, err, clip(p.b))
			}
			return GC, nil
		}
		off = start + 1
	}
	switch {
	case bytes.Equal(line, []byte("GC forced")):
		return Forced, nil
	case bytes.HasPrefix(line, []byte("scav ")), bytes.HasPrefix(line, []byte("scvg")):
		return Scav, nil
	case tornForced(line):
		return TornForced, nil
	}
	return Other, nil
}

// tornForced says whether line starts with the end of a torn gc line: its
// " (forced)" mark, alone or after the fragment that ends a gc line
// ("N P", or part of it), with whatever another writer wrote after it.
func tornForced(line []byte) bool {
	i := bytes.Index(line, forcedMark)
	if i < 0 {
		return false
	}
	pre := line[:i]
	if len(pre) == 0 {
		return true
	}
	if !bytes.HasSuffix(pre, []byte("P")) {
		return false
	}
	for _, b := range pre[:len(pre)-1] {
		if (b < '0' || b > '9') && b != ' ' {
			return false
		}
	}
	return true
}

// cycleHead reads "N @" after "gc " (and only that: a torn line is
// recognised by its first write of the runtime).
func cycleHead(b []byte) (uint64, []byte, bool) {
	var n uint64
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if i >= 19 {
			return 0, nil, false
		}
		n = n*10 + uint64(b[i]-'0')
	}
	if i == 0 || len(b) < i+2 || b[i] != ' ' || b[i+1] != '@' {
		return 0, nil, false
	}
	return n, b[i+2:], true
}

func clip(b []byte) string {
	if len(b) > 32 {
		return string(b[:32]) + "..."
	}
	return string(b)
}
