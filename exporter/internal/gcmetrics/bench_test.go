package gcmetrics

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkSourceLine is the exporter's per-line cost: parse plus metric
// updates, for a stream of increasing gc lines mixed with other output.
func BenchmarkSourceLine(b *testing.B) {
	s := New(prometheus.NewRegistry()).Source("proxybench-caddy", "caddy")
	lines := make([][]byte, 1024)
	for i := range lines {
		if i%2 == 0 {
			lines[i] = []byte(`{"level":"info","ts":1764480000.123,"logger":"http.log.access","msg":"handled request","status":200}`)
			continue
		}
		lines[i] = fmt.Appendf(nil, "gc %d @%d.013s 2%%: 0.10+1.4+0.030 ms clock, 0.20+0.5/1.4/0+0.060 ms cpu, 7->7->5 MB, 8 MB goal, 0 MB stacks, 0 MB globals, 2 P", i+1, i)
	}
	ts := time.Unix(1764480000, 0)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n%len(lines) == 0 {
			s.Reset()
		}
		s.Line(ts, lines[n%len(lines)])
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
}
