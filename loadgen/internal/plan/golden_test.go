package plan

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// TestExpandedJSON pins results/<run>/plan.json, which the reporter reads:
// a change here is a change of contract.
func TestExpandedJSON(t *testing.T) {
	t.Parallel()
	p, err := Load(strings.Fields("-run golden -tier 5s,30s -proxies nginx,caddy -origins fast -scenarios simple,churn,auth,ratelimit,slow -rate 1000"), now, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	x, err := p.Expand()
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(x, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "expanded.golden.json")
	if *update {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update)", err)
	}
	if string(append(got, '\n')) != string(want) {
		t.Errorf("expanded plan differs from %s (go test -update to accept):\n%s", golden, got)
	}
}
