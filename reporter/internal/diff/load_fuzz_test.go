package diff

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"proxybench/internal/cellid"
	"proxybench/reporter/internal/report"
)

// FuzzLoadCompare: the two report.json files `reporter diff` reads
// (results/A/report.json and results/history/B/report.json), any bytes.
// Load refuses with an error naming the file and the rebuild command, never
// panics; two reports it accepts compare and render without panicking, the
// regression count is the gates that fired, every key of A's own cells is
// judged, and a run compared with itself has no regression; the
// interleaved mode over B never panics and gates only from its candidate.
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
	arms := strings.ReplaceAll(strings.ReplaceAll(small, `"tier":"q","repeat"`, `"tier":"q","arm":"candidate","repeat"`), `"run":"A"`, `"run":"B"`)
	f.Add([]byte(small), []byte(strings.Replace(arms, `"cells":[`, `"cells":[`+cellsOf(small)+`,`, 1)))
	f.Add([]byte(small), []byte(strings.ReplaceAll(arms, `"arm":"candidate"`, `"arm":"unobserved"`)))
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
	all := Options{Margin: 0.05, ErrorMargin: 0.005, Alpha: 0.05}
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
		for _, o := range []Options{DefaultOptions, all, {Margin: 0.5, ErrorMargin: 0.1, Alpha: 0.001, Metrics: all.Metrics}} {
			checkCompare(t, ra, rb, o)
			if self := checkCompare(t, ra, ra, o); self.Regressions != 0 {
				t.Fatalf("run A compared with itself has %d regressions: %+v", self.Regressions, self)
			}
		}
	})
}

// cellsOf is the cells array of a report seed, without its brackets.
func cellsOf(js string) string {
	from := strings.Index(js, `"cells":[`) + len(`"cells":[`)
	to := strings.Index(js, `],"not_run"`)
	return js[from:to]
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
		if k := a.Cells[i].GroupKey(); a.Cells[i].Arm == "" && !judged[k] {
			t.Fatalf("key %q of A is not judged", k)
		}
	}
	var md, js bytes.Buffer
	if err := res.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(md.String(), "# proxybench diff: ") {
		t.Fatalf("markdown does not start with its title:\n%s", md.String())
	}
	if err := res.JSON(&js); err != nil || !json.Valid(js.Bytes()) {
		t.Fatalf("JSON %v:\n%s", err, js.String())
	}
	// The interleaved mode over the same report: never a panic, gates
	// only from the candidate, and outputs that encode.
	rr := CompareRun(b, o)
	gates = 0
	for _, set := range rr.Arms {
		for _, k := range set.Keys {
			if k.Gate {
				gates++
			}
		}
		for _, r := range set.Rows {
			if r.Gate {
				gates++
				if set.Arm != cellid.ArmCandidate {
					t.Fatalf("arm %s gated: %+v", set.Arm, r)
				}
			}
		}
	}
	if gates != rr.Regressions {
		t.Fatalf("-run: %d regressions counted, %d gates fired", rr.Regressions, gates)
	}
	md.Reset()
	js.Reset()
	if err := rr.Markdown(&md); err != nil || rr.JSON(&js) != nil || !json.Valid(js.Bytes()) {
		t.Fatalf("-run outputs: %v\n%s", err, js.String())
	}
	return res
}
