package atomicfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "report.json")
	if err := WriteFile(p, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "two\n" {
		t.Fatalf("read %q, %v; want the second version", b, err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, %v; want 0640", fi.Mode(), err)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("directory holds %v, want only report.json (no temporary file left)", ents)
	}
}

// TestWriteFileConcurrent: writers of one path never interleave bytes; the
// file is always one writer's whole content.
func TestWriteFileConcurrent(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "index.json")
	want := map[string]bool{}
	var wg sync.WaitGroup
	for i := range 8 {
		body := bytes.Repeat([]byte(fmt.Sprintf("writer %d\n", i)), 4096)
		want[string(body)] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := WriteFile(p, body, 0o644); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(p)
	if err != nil || !want[string(b)] {
		t.Fatalf("file is not one writer's whole content (%d bytes, %v)", len(b), err)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries, want 1", len(ents))
	}
}
