package certscmd

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/tlscert"
)

func TestRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	now := time.Now()
	var out1, out2, errb bytes.Buffer
	if rc := run([]string{"-dir", dir, "-key", "rsa"}, &out1, &errb, now); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	if !strings.HasPrefix(out1.String(), "TLS_CERT_SHA256=") || len(strings.TrimSpace(out1.String())) != len("TLS_CERT_SHA256=")+64 {
		t.Errorf("stdout %q, want one TLS_CERT_SHA256=<64 hex> line", out1.String())
	}
	if !strings.Contains(errb.String(), "made new") {
		t.Errorf("stderr %q, want it to say the files were made", errb.String())
	}
	errb.Reset()
	if rc := run([]string{"-dir", dir, "-key", "rsa"}, &out2, &errb, now); rc != 0 || out2.String() != out1.String() || !strings.Contains(errb.String(), "reused") {
		t.Errorf("second run: rc %d, stdout %q (first %q), stderr %q; want the same files reused", rc, out2.String(), out1.String(), errb.String())
	}
	if _, err := tlscert.CAPool(dir); err != nil {
		t.Error(err)
	}
	if rc := run([]string{"-dir", dir, "-key", "dsa"}, &out2, &errb, now); rc != 2 {
		t.Errorf("-key dsa: rc %d, want 2", rc)
	}
}
