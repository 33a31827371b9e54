package build

import (
	"context"
	"encoding/json"
	"html"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"proxybench/internal/headless"
	"proxybench/reporter/internal/output"
	"proxybench/reporter/internal/render"
	"proxybench/reporter/internal/report"
)

func chromium(t *testing.T) string {
	t.Helper()
	p, err := headless.Find()
	if err != nil {
		t.Skip(err.Error() + " (make test-report-html does)")
	}
	return p
}

func chromiumRun(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := headless.Run(ctx, bin, t.TempDir(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReportHTMLRendersInChromium renders report.html of a synthetic run in
// headless Chromium: every figure must get a real layout box, and the
// screenshot must have the asked size and not be blank.
func TestReportHTMLRendersInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus and Chromium")
	}
	bin := chromium(t)
	run := synthRun("html-1", 2, true)
	c := startProm(t, run)
	dir := t.TempDir()
	r, err := Report(context.Background(), Config{Prom: c, PromURL: "test", Run: run.ID, RunDir: dir,
		SLO: report.SLO{P99: 10 * time.Millisecond, ErrorRatio: 0.01}, SLOFromFlag: true, Thresholds: report.DefaultThresholds, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := output.Write(dir, r); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`(?i)<script|src="http|href="http|<link`).Match(page) {
		t.Fatal("report.html is not self-contained: it has a script or an external reference")
	}

	// Layout: a probe copy reports each figure's box into the dumped DOM.
	probe := strings.Replace(string(page), "</body>", `<script>
document.body.setAttribute("data-boxes", JSON.stringify(Array.from(document.querySelectorAll("figure.fig")).map(function (f) {
  var r = f.querySelector("svg").getBoundingClientRect();
  return {name: f.dataset.figure, w: r.width, h: r.height, shapes: f.querySelectorAll("rect,line,polyline").length};
})));
</script></body>`, 1)
	probePath := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(probePath, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := chromiumRun(t, bin, "--window-size=1400,3000", "--dump-dom", "file://"+probePath)
	m := regexp.MustCompile(`data-boxes="([^"]*)"`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("no layout boxes in the dumped DOM:\n%.2000s", dom)
	}
	var boxes []struct {
		Name   string
		W, H   float64
		Shapes int
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &boxes); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{render.FigLatency: false, render.FigRPS: false, render.FigResources: false, render.FigGC: false}
	for _, b := range boxes {
		if b.W < 600 || b.H < 150 || b.Shapes < 20 {
			t.Errorf("figure %s laid out at %.0fx%.0f with %d shapes: not visible", b.Name, b.W, b.H, b.Shapes)
		}
		want[b.Name] = true
	}
	for n, seen := range want {
		if !seen {
			t.Errorf("figure %s missing from report.html", n)
		}
	}

	// Screenshot: right size, not blank.
	shot := filepath.Join(dir, "report.png")
	chromiumRun(t, bin, "--window-size=1400,3000", "--screenshot="+shot, "file://"+filepath.Join(dir, "report.html"))
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 3000 {
		t.Fatalf("screenshot %dx%d, want 1400x3000", b.Dx(), b.Dy())
	}
	if inked, colored := headless.Ink(img); inked < 0.03 || colored < 0.005 {
		t.Fatalf("screenshot looks blank: %.1f %% of sampled pixels inked, %.2f %% coloured", 100*inked, 100*colored)
	}
	if out := os.Getenv("PROXYBENCH_SCREENSHOT_DIR"); out != "" {
		png, _ := os.ReadFile(shot)
		_ = os.WriteFile(filepath.Join(out, "report.png"), png, 0o644)
		for _, n := range []string{"report.html", "report.md", "report.json"} {
			b, _ := os.ReadFile(filepath.Join(dir, n))
			_ = os.WriteFile(filepath.Join(out, n), b, 0o644)
		}
	}
}
