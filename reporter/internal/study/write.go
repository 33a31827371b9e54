package study

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"proxybench/internal/atomicfile"
	"proxybench/internal/studydata"
	"proxybench/reporter/internal/output"
	"proxybench/reporter/internal/render"
	"proxybench/reporter/internal/report"
)

// Files of a study's report inside results/<study-run>/.
const (
	FileSummary = "summary.json"
	FileSamples = "samples.csv"
	FileStats   = "stats.csv"
	FileReport  = "report.md"
	FileHTML    = "report.html"
	// FilePartial is where a rebuild poorer than the report it would
	// replace (fewer good samples) goes instead.
	FilePartial = "report.partial.md"
)

// Build reads dir/study.json and writes the report beside it, then indexes
// it in resultsDir/history. It returns the summary and whether the report
// was written as a partial one (the existing report held more samples and
// stays).
func Build(resultsDir, run string, now time.Time) (*Summary, bool, error) {
	dir := filepath.Join(resultsDir, run)
	rec, err := studydata.Read(filepath.Join(dir, studydata.File))
	if err != nil {
		return nil, false, err
	}
	s := Summarize(rec, now)
	files, err := Files(rec, s)
	if err != nil {
		return nil, false, err
	}
	if old, err := readSummary(filepath.Join(dir, FileSummary)); err == nil && old.Samples > s.Samples {
		if err := atomicfile.WriteFile(filepath.Join(dir, FilePartial), files[FileReport], 0o644); err != nil {
			return nil, false, err
		}
		return s, true, nil
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := atomicfile.WriteFile(filepath.Join(dir, n), files[n], 0o644); err != nil {
			return nil, false, err
		}
	}
	_ = os.Remove(filepath.Join(dir, FilePartial))
	e := output.HistoryEntry{Run: s.Run, Start: s.Start, End: s.End, Generated: s.Generated, Study: s.Study,
		Report: filepath.ToSlash(filepath.Join(s.Run, FileSummary)), Tiers: []string{s.Scale},
		Summary: report.Summary{Cells: s.Samples + s.Failed, Valid: s.Samples, Invalid: s.Failed + failedChecks(s)}}
	return s, false, output.ArchiveStudy(resultsDir, e, map[string][]byte{FileSummary: files[FileSummary], FileReport: files[FileReport]})
}

func failedChecks(s *Summary) int {
	n := 0
	for _, c := range s.Checks {
		if !c.OK {
			n++
		}
	}
	return n
}

func readSummary(path string) (*Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	return &s, nil
}

// Files renders every file of the report, keyed by its path in the run's
// directory.
func Files(rec *studydata.Record, s *Summary) (map[string][]byte, error) {
	js, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode summary: %w", err)
	}
	doc := Document(s)
	figs := Figures(s)
	var md, page bytes.Buffer
	if err := render.Markdown(&md, doc); err != nil {
		return nil, fmt.Errorf("render markdown: %w", err)
	}
	if err := render.HTML(&page, doc, figs); err != nil {
		return nil, fmt.Errorf("render html: %w", err)
	}
	files := map[string][]byte{FileSummary: append(js, '\n'), FileReport: md.Bytes(), FileHTML: page.Bytes(),
		FileSamples: samplesCSV(rec), FileStats: statsCSV(s)}
	for name, b := range figs {
		files[filepath.Join("figures", name)] = b
	}
	return files, nil
}

func fnum(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// fn formats a Num for the CSV: empty when unknown.
func fn(x Num) string {
	if !x.Known() {
		return ""
	}
	return fnum(float64(x))
}

// samplesCSV is one row per sample: its place in the run, then every metric.
func samplesCSV(rec *studydata.Record) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	head := []string{"order", "group", "variant", "repeat", "start", "end", "error"}
	for _, m := range rec.Metrics {
		head = append(head, m.Name)
	}
	_ = w.Write(head)
	for _, x := range rec.Samples {
		row := []string{strconv.Itoa(x.Order), x.Group, x.Variant, strconv.Itoa(x.Repeat),
			x.Start.UTC().Format(time.RFC3339Nano), x.End.UTC().Format(time.RFC3339Nano), x.Error}
		for _, m := range rec.Metrics {
			v, ok := x.Values[m.Name]
			if ok {
				row = append(row, fnum(v))
			} else {
				row = append(row, "")
			}
		}
		_ = w.Write(row)
	}
	w.Flush()
	return b.Bytes()
}

// statsCSV is one row per group × variant × metric summary.
func statsCSV(s *Summary) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"group", "variant", "metric", "n", "failed", "mean", "ci95_low", "ci95_high", "median",
		"median_ci_low", "median_ci_high", "median_ci_coverage", "stddev", "cv", "min", "max"})
	for _, x := range s.Stats {
		_ = w.Write([]string{x.Group, x.Variant, x.Metric, strconv.Itoa(x.N), strconv.Itoa(x.Failed), fn(x.Mean),
			fn(x.CILow), fn(x.CIHigh), fn(x.Median), fn(x.MedianLow), fn(x.MedianHigh), fn(x.MedianCoverage),
			fn(x.Stddev), fn(x.CV), fn(x.Min), fn(x.Max)})
	}
	w.Flush()
	return b.Bytes()
}
