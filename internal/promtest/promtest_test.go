package promtest

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestNamesMatchGobin: Version and Tags name the binaries scripts/gobin.sh
// builds, so they must be the script's pins; a bump of one without the
// other would send every test to a binary that is never built.
func TestNamesMatchGobin(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "scripts", "gobin.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"PROMETHEUS_VERSION": Version, "PROMETHEUS_TAGS": Tags} {
		m := regexp.MustCompile(`(?m)^` + name + `=(\S+)`).FindSubmatch(b)
		if m == nil {
			t.Errorf("scripts/gobin.sh sets no %s", name)
		} else if string(m[1]) != want {
			t.Errorf("scripts/gobin.sh: %s=%s, promtest has %q", name, m[1], want)
		}
	}
}
