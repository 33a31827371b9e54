package scenario

import (
	"math"
	"strings"
	"testing"
)

func TestPayloadShape(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		sc    *Scenario
		path  string
		bytes int64
		about string
	}{
		{&payload1k, "/fast/bytes/1024", 1 << 10, "1 KiB"},
		{&payload64k, "/fast/bytes/65536", 64 << 10, "64 KiB"},
		{&payload1m, "/fast/bytes/1048576", 1 << 20, "1 MiB"},
	} {
		sh := tt.sc.Resolve(defaults)
		if tt.sc.Path("fast", defaults) != tt.path || sh.BodyBytes != tt.bytes || sh.Method != "" || !strings.Contains(tt.sc.About, tt.about) ||
			tt.sc.Skip("caddy") != nil || tt.sc.Report != payloadTable {
			t.Errorf("%s: path %s shape %+v about %q", tt.sc.Name, tt.sc.Path("fast", defaults), sh, tt.sc.About)
		}
	}
}

func TestPayloadAccountAndJudging(t *testing.T) {
	t.Parallel()
	sh := payload1m.Resolve(defaults)
	d := bodyAccount(sh, Counts{WindowS: 2, Bytes: 100 << 20})
	if d == nil || d.BodyBytes != 1<<20 || d.BytesPerSec != 50<<20 || d.UploadBytes != 0 {
		t.Fatalf("account %+v", d)
	}
	fs, ok := row(t, payloadTable, ReportCell{Name: "c", RPS: 50, DurationS: 2, S2xx: 100, Data: d})
	if got := strings.Join(texts(fs), "|"); !ok || got != "c|1 MiB|50|52.4|52.4|yes|h1" {
		t.Errorf("row %s", got)
	}
	if fs, _ := row(t, payloadTable, ReportCell{Name: "c", DurationS: 2, S2xx: 90, Data: d}); fs[5].Text != "no" {
		t.Errorf("bytes for 100 bodies but 90 2xx judged %q", fs[5].Text)
	}
	if fs, _ := row(t, payloadTable, ReportCell{Name: "c", DurationS: math.NaN(), Data: d}); fs[5].Text != "no" || fs[4].Text != "–" {
		t.Errorf("unknown duration: %q", texts(fs))
	}
	if humanBytes(1500) != "1500 B" {
		t.Errorf("humanBytes(1500) = %s", humanBytes(1500))
	}
}
