package render

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"proxybench/reporter/internal/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// testdata/report.json is a report of the synthetic run (internal/synth)
// built against real Prometheus; regenerate it with
// PROXYBENCH_SCREENSHOT_DIR=... go test ./reporter/internal/build -run Chromium.
func loadReport(t *testing.T) *report.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s (run go test -update and review the diff)", name, p)
	}
}

func TestGolden(t *testing.T) {
	t.Parallel()
	r := loadReport(t)
	d := Document(r)
	var md, page bytes.Buffer
	figs := Figures(r)
	if err := Markdown(&md, d); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&page, d, figs); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.md", md.Bytes())
	golden(t, "report.html", page.Bytes())
	for _, n := range []string{FigLatency, FigRPS, FigResources, FigGC} {
		golden(t, n, figs[n])
	}
}

// TestFiguresDeterministicAndWellFormed renders twice (byte-identical) and
// parses every SVG as XML.
func TestFiguresDeterministicAndWellFormed(t *testing.T) {
	t.Parallel()
	r := loadReport(t)
	a, b := Figures(r), Figures(r)
	if len(a) != 4 {
		t.Fatalf("%d figures, want 4", len(a))
	}
	for n, svg := range a {
		if !bytes.Equal(svg, b[n]) {
			t.Errorf("%s is not deterministic", n)
		}
		dec := xml.NewDecoder(bytes.NewReader(svg))
		for {
			_, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Errorf("%s is not well-formed XML: %v", n, err)
				break
			}
		}
		if strings.Contains(string(svg), "NaN") || strings.Contains(string(svg), "Inf") {
			t.Errorf("%s contains NaN/Inf coordinates", n)
		}
	}
}

func TestFormatting(t *testing.T) {
	t.Parallel()
	tests := []struct{ got, want string }{
		{fmtDur(0.00004), "40 µs"}, {fmtDur(0.0123), "12.3 ms"}, {fmtDur(1.5), "1.5 s"}, {fmtDur(report.NaN()), "–"},
		{fmtMs(0.00123), "1.23"}, {fmtMs(0.123), "123"}, {fmtPct(0.00001), "<0.01 %"}, {fmtPct(0.0125), "1.25 %"},
		{fmtInt(1234567), "1,234,567"}, {fmtMB(12_345_678), "12.3 MB"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
