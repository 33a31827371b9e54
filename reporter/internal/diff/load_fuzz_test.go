package diff

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"proxybench/reporter/internal/report"
)

// FuzzLoadCompare: the two report.json files `reporter diff` reads
// (results/A/report.json and results/history/B/report.json), any bytes.
// Load refuses with an error naming the file and the rebuild command, never
// panics; two reports it accepts compare and render without panicking, the
// regression count is the gates that fired, every key of A is judged, and a
// run compared with itself has no regression.
func FuzzLoadCompare(f *testing.F) {
	small := `{"schema":"proxybench.report/v1","run":"A","cells":[` +
		`{"id":"n.f.s.q.r1","proxy":"n","origin":"f","scenario":"s","tier":"q","repeat":1,"rps":100,"goodput_rps":100,"error_ratio":0,"latency":{"p50":0.001,"p99":0.002},"validity":{"verdict":"valid"}},` +
		`{"id":"n.f.s.q.r2","proxy":"n","origin":"f","scenario":"s","tier":"q","repeat":2,"rps":90,"goodput_rps":null,"error_ratio":0.5,"failed":true,"latency":{"p99":null,"exact":{"p99":0.003}},` +
		`"validity":{"verdict":"invalid","flags":[{"code":"failed","severity":"invalid","reason":"died"}]}}],` +
		`"not_run":[{"id":"n.f.s.q.r3","reason":""},{"id":"x.y.z.q.r1","reason":"route"},{"id":"","reason":"r"}]}`
	f.Add([]byte(small), []byte(strings.ReplaceAll(small, `"rps":100`, `"rps":50`)))
	f.Add([]byte(small), []byte(`{"schema":"proxybench.report/v1","run":"B"}`))
	f.Add([]byte(`{"schema":"proxybench.report/v1","cells":[{"rps":1e308},{"rps":-1e308},{"rps":0},{"rps":-0}]}`),
		[]byte(`{"schema":"proxybench.report/v1","cells":[{"rps":5e-324},{"rps":1e308}]}`))
	f.Add([]byte("{"), []byte("null"))
	f.Add([]byte(`{"schema":"proxybench.report/v0"}`), []byte(""))
	for _, g := range gateCases() {
		a, err1 := json.Marshal(g.a)
		b, err2 := json.Marshal(g.b)
		if err1 != nil || err2 != nil {
			f.Fatal(err1, err2)
		}
		f.Add(a, b)
	}
	res := f.TempDir()
	pa, pb := filepath.Join(res, "A", "report.json"), filepath.Join(res, "history", "B", "report.json")
	for _, p := range []string{pa, pb} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	all := Options{Threshold: 0.05, ErrorThreshold: 0.005, Alpha: 0.05}
	for _, m := range report.GroupMetrics {
		all.Metrics = append(all.Metrics, m.Name)
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if err := os.WriteFile(pa, a, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pb, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ra, errA := Load(res, "A")
		rb, errB := Load(res, "B")
		for _, c := range []struct {
			err  error
			path string
		}{{errA, pa}, {errB, pb}} {
			if c.err != nil && (!strings.Contains(c.err.Error(), c.path) || !strings.Contains(c.err.Error(), "make report RUN=")) {
				t.Fatalf("error %q does not name %s and how to rebuild it", c.err, c.path)
			}
		}
		if errA != nil || errB != nil {
			return
		}
		for _, o := range []Options{DefaultOptions, all, {Metrics: all.Metrics, RequireSignificance: true}} {
			checkCompare(t, ra, rb, o)
			if self := checkCompare(t, ra, ra, o); self.Regressions != 0 {
				t.Fatalf("run A compared with itself has %d regressions: %+v", self.Regressions, self)
			}
		}
	})
}

func checkCompare(t *testing.T, a, b *report.Report, o Options) Result {
	t.Helper()
	res := Compare(a, b, o)
	gates := 0
	judged := map[string]bool{}
	for _, k := range res.Keys {
		judged[k.Key] = true
		if k.Gate {
			gates++
		}
	}
	for _, r := range res.Rows {
		if r.Gate {
			gates++
		}
	}
	if gates != res.Regressions {
		t.Fatalf("%d regressions counted, %d gates fired", res.Regressions, gates)
	}
	for i := range a.Cells {
		if k := a.Cells[i].GroupKey(); !judged[k] {
			t.Fatalf("key %q of A is not judged", k)
		}
	}
	var md bytes.Buffer
	if err := res.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(md.String(), "# proxybench diff: ") {
		t.Fatalf("markdown does not start with its title:\n%s", md.String())
	}
	return res
}
