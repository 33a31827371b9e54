package study

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/studydata"
	"proxybench/reporter/internal/output"
)

var t0 = time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)

// record is a netstack-like study: bare vs bridge, bridge clearly slower
// in mean, equal in p99.
func record() *studydata.Record {
	r := &studydata.Record{Schema: studydata.Schema, Run: "s1", Study: "netstack", Title: "Network stack", Scale: "tiny",
		Status: studydata.StatusDone, Start: t0, End: t0.Add(time.Minute), Baseline: "bare",
		Metrics:  []studydata.Metric{{Name: "mean_us", Label: "mean", Unit: "µs", Better: "lower"}, {Name: "p99_us", Label: "p99", Unit: "µs", Better: "lower"}},
		Variants: []studydata.Variant{{Name: "bare", Label: "bare metal"}, {Name: "bridge", Label: "Docker bridge"}, {Name: "none"}},
		Checks:   []studydata.Check{{Name: "modes differ", OK: true, Detail: "netns differ"}},
		NA:       []studydata.NA{{Variant: "none", Reason: "not here"}},
		Original: []studydata.Reference{{Variant: "bare", Metric: "mean_us", Value: 150.7, Unit: "µs"}}}
	bare := []float64{100, 102, 98, 101, 99}
	bridge := []float64{120, 118, 122, 121, 119}
	p99 := []float64{300, 320, 310, 305, 315}
	for i := range bare {
		r.Samples = append(r.Samples,
			studydata.Sample{Variant: "bare", Repeat: i + 1, Values: map[string]float64{"mean_us": bare[i], "p99_us": p99[i]}},
			studydata.Sample{Variant: "bridge", Repeat: i + 1, Values: map[string]float64{"mean_us": bridge[i], "p99_us": p99[(i+2)%5]}})
	}
	r.Samples = append(r.Samples, studydata.Sample{Variant: "bridge", Repeat: 6, Error: "container died"})
	return r
}

func TestSummarize(t *testing.T) {
	s := Summarize(record(), t0)
	st, ok := s.Stat("", "bare", "mean_us")
	if !ok || st.N != 5 || float64(st.Mean) != 100 || float64(st.Median) != 100 || float64(st.Min) != 98 || float64(st.Max) != 102 {
		t.Fatalf("bare mean stat = %+v", st)
	}
	if math.Abs(float64(st.MedianCoverage)-0.9375) > 1e-12 || float64(st.MedianLow) != 98 || float64(st.MedianHigh) != 102 {
		t.Errorf("median CI of 5 values = [%v, %v] at %v, want the range at 93.75 %%", st.MedianLow, st.MedianHigh, st.MedianCoverage)
	}
	br, _ := s.Stat("", "bridge", "mean_us")
	if br.N != 5 || br.Failed != 1 {
		t.Errorf("bridge: n %d failed %d, want 5 and 1 (a failed sample is counted, never averaged)", br.N, br.Failed)
	}
	if s.Samples != 10 || s.Failed != 1 || !s.ChecksOK {
		t.Errorf("samples %d failed %d checks ok %v", s.Samples, s.Failed, s.ChecksOK)
	}
	var mean, p99 *Diff
	for i := range s.Diffs {
		switch s.Diffs[i].Metric {
		case "mean_us":
			mean = &s.Diffs[i]
		case "p99_us":
			p99 = &s.Diffs[i]
		}
	}
	if mean == nil || float64(mean.Delta) != 20 || mean.Verdict != VerdictHigher || float64(mean.Low) <= 0 {
		t.Errorf("mean diff = %+v, want +20 µs, higher, CI above 0", mean)
	}
	if p99 == nil || p99.Verdict != VerdictNone || float64(p99.Delta) != 0 {
		t.Errorf("p99 diff = %+v, want no significant difference", p99)
	}
	if len(s.Original) != 1 || float64(s.Original[0].Ours) != 100 || s.Original[0].OursN != 5 {
		t.Errorf("original beside ours = %+v", s.Original)
	}
}

func TestMedianCI(t *testing.T) {
	xs := []float64{9, 1, 8, 2, 7, 3, 6, 4, 5}
	lo, hi, cov := MedianCI(xs, 0.95)
	// n = 9: [x(2), x(8)] covers 1 - 2·P(B <= 1) = 1 - 20/512.
	if lo != 2 || hi != 8 || math.Abs(cov-(1-20.0/512)) > 1e-12 {
		t.Errorf("MedianCI(1..9) = [%v, %v] at %v", lo, hi, cov)
	}
	if lo, hi, cov := MedianCI([]float64{3}, 0.95); lo != 3 || hi != 3 || cov != 0 {
		t.Errorf("one value: [%v, %v] at %v, want [3, 3] at 0", lo, hi, cov)
	}
	if lo, _, _ := MedianCI(nil, 0.95); !math.IsNaN(lo) {
		t.Errorf("no value: %v, want NaN", lo)
	}
}

func TestBuildWritesEveryFileAndNeverAPoorerOne(t *testing.T) {
	res := t.TempDir()
	r := record()
	if err := studydata.Write(filepath.Join(res, r.Run, studydata.File), r); err != nil {
		t.Fatal(err)
	}
	s, partial, err := Build(res, r.Run, t0)
	if err != nil || partial {
		t.Fatalf("Build: %v partial %v", err, partial)
	}
	dir := filepath.Join(res, r.Run)
	for _, f := range []string{FileSummary, FileSamples, FileStats, FileReport, FileHTML, "figures/mean_us.svg", "figures/p99_us.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, FileReport))
	for _, want := range []string{"no significant difference", "n/a: not here", "Beside the original findings", "+1 failed", "93.8 %"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dir, FileSamples))
	if n := strings.Count(string(csv), "\n"); n != 12 {
		t.Errorf("samples.csv has %d lines, want a header and 11 samples", n)
	}
	var back Summary
	js, _ := os.ReadFile(filepath.Join(dir, FileSummary))
	if err := json.Unmarshal(js, &back); err != nil || back.Samples != s.Samples {
		t.Errorf("summary.json does not read back: %v", err)
	}
	h, err := output.ReadHistory(res)
	if err != nil || len(h.Runs) != 1 || h.Runs[0].Kind != output.KindStudy || h.Runs[0].Study != "netstack" || h.Runs[0].Summary.Valid != 10 {
		t.Fatalf("history = %+v, %v", h, err)
	}

	// A record with fewer samples (a restarted study, a lost file) must not
	// replace the report.
	r.Samples = r.Samples[:4]
	if err := studydata.Write(filepath.Join(dir, studydata.File), r); err != nil {
		t.Fatal(err)
	}
	if _, partial, err := Build(res, r.Run, t0); err != nil || !partial {
		t.Fatalf("poorer rebuild: partial %v, err %v", partial, err)
	}
	js2, _ := os.ReadFile(filepath.Join(dir, FileSummary))
	if string(js2) != string(js) {
		t.Error("a poorer rebuild replaced summary.json")
	}
	if _, err := os.Stat(filepath.Join(dir, FilePartial)); err != nil {
		t.Errorf("no %s: %v", FilePartial, err)
	}
}

func TestFailedCheckIsStated(t *testing.T) {
	r := record()
	r.Checks = append(r.Checks, studydata.Check{Name: "loss matches", OK: false, Detail: "measured 3 %"})
	s := Summarize(r, t0)
	if s.ChecksOK {
		t.Fatal("ChecksOK with a failed check")
	}
	files, err := Files(r, s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(files[FileReport]), "A mechanism check failed") {
		t.Error("report does not say a check failed")
	}
}
