package gctrace

import (
	"syscall"
	"testing"
	"time"
)

var benchLines = [][]byte{
	[]byte("gc 2 @0.013s 72%: 9.3+1.4+0.003 ms clock, 18+0.027/1.4/0+0.006 ms cpu, 7->7->5 MB, 7 MB goal, 0 MB stacks, 0 MB globals, 2 P"),
	[]byte("gc 12 @1.234s 3%: 0.017+0.41+0.12 ms clock, 0.035+0/0.16/0.22+0.25 ms cpu, 4->4->0 MB, 5 MB goal, 4 P (forced)"),
	[]byte(`{"level":"info","ts":1764480000.123,"logger":"http.log.access","msg":"handled request","status":200}`),
	[]byte("scav 0 KiB work (bg), 0 KiB work (eager), 4096 KiB now, 12 KiB released"),
}

// cpuTime is this process's user+system CPU time. The machine is shared,
// so lines per CPU second says what one core can do where lines per wall
// second would measure the neighbours.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchParse(b *testing.B, lines [][]byte) {
	var c Cycle
	b.ReportAllocs()
	n := 0
	cpu0 := cpuTime(b)
	for b.Loop() {
		Parse(lines[n%len(lines)], &c)
		n++
	}
	b.ReportMetric(float64(n)/(cpuTime(b)-cpu0).Seconds(), "lines/cpu-s")
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkParse runs a mix of gc lines and other output; the exporter
// needs at least 1,000,000 lines per second of one core (run with -cpu 1).
func BenchmarkParse(b *testing.B) { benchParse(b, benchLines) }

// BenchmarkParseGC is the worst case: every line a full gc line.
func BenchmarkParseGC(b *testing.B) { benchParse(b, benchLines[:1]) }
