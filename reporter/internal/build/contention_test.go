package build

import (
	"strings"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
	"proxybench/reporter/internal/report"
)

// TestMergeManifestContention: the manifest's contention readings become
// the cell's shares, and a hog on the proxy's CPU makes it contended; a
// cell from a manifest without them has none and is not judged on them.
func TestMergeManifestContention(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		ct   *manifest.Contention
		want string // the contended reason's start, "" = not contended
	}{
		{"hog on the proxy's CPU", &manifest.Contention{WindowSeconds: 5, Roles: []manifest.RoleContention{
			{Role: manifest.RoleLoadgen, CPUs: "0", CPUSeconds: 2, ForeignSeconds: ptr(0.3), RunDelaySeconds: ptr(2), StealSeconds: ptr(0.01)},
			{Role: manifest.RoleProxy, Container: "proxybench-nginx", CPUs: "1", CPUSeconds: 2.5, ForeignSeconds: ptr(2.4), RunDelaySeconds: ptr(4.5), StealSeconds: ptr(0)},
		}}, "proxy (proxybench-nginx): 48 % of its CPU 1's time"},
		{"quiet", &manifest.Contention{WindowSeconds: 5, Roles: []manifest.RoleContention{
			{Role: manifest.RoleProxy, CPUs: "1", CPUSeconds: 4.8, ForeignSeconds: ptr(0.05), RunDelaySeconds: ptr(3), StealSeconds: ptr(0.02)},
		}}, ""},
		{"no readings", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := emptyCell(collectWindow(start))
			mergeManifest(&w, &manifest.Cell{Key: cellid.Key{ID: w.ID}, Contention: c.ct})
			if (c.ct == nil) != (w.Contention == nil) {
				t.Fatalf("contention %+v from %+v", w.Contention, c.ct)
			}
			report.Judge(&w, report.DefaultThresholds, false)
			var why string
			for _, f := range w.Validity.Flags {
				if f.Code == report.FlagContended {
					why = f.Reason
				}
			}
			if c.want == "" && why != "" || !strings.HasPrefix(why, c.want) {
				t.Errorf("contended %q, want %q", why, c.want)
			}
		})
	}
}
