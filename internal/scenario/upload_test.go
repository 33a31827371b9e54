package scenario

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

func TestUpload(t *testing.T) {
	t.Parallel()
	sh := upload.Resolve(defaults)
	if sh.Method != http.MethodPost || sh.BodyBytes != 64<<10 || len(upload.Body) != 64<<10 || upload.Path("go", defaults) != "/go/echo" ||
		!bytes.HasPrefix(upload.Body, []byte("abcdefghijklmnopqrstuvwxyz0123456789abc")) || upload.Report != payloadTable {
		t.Errorf("shape %+v, body %q...", sh, upload.Body[:40])
	}
	d := upload.Account(sh, Counts{WindowS: 1, Bytes: 640 << 10})
	if d == nil || d.UploadBytes != 64<<10 || d.BodyBytes != 64<<10 || d.BytesPerSec != 640<<10 {
		t.Fatalf("account %+v", d)
	}
	fs, ok := row(t, payloadTable, ReportCell{Name: "c", RPS: 10, DurationS: 1, S2xx: 10, Data: d})
	if got := strings.Join(texts(fs), "|"); !ok || got != "c|POST 64 KiB echoed|10|0.7|0.7|yes|h1" {
		t.Errorf("row %s", got)
	}
}
