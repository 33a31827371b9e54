package runner

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
)

func writeRun(t *testing.T, results, run, status string, started time.Time) *manifest.Manifest {
	t.Helper()
	m := &manifest.Manifest{Schema: manifest.SchemaVersion, Run: run, Status: status, Started: started,
		Plan:  json.RawMessage(`{"tier":"quick","proxies":["nginx","caddy"],"origins":["fast"]}`),
		Cells: []manifest.Cell{{Key: cellid.Key{ID: "nginx.fast.simple.quick.r1"}}, {Key: cellid.Key{ID: "caddy.fast.simple.quick.r1"}}}}
	if err := manifest.Write(filepath.Join(results, run, "manifest.json"), m); err != nil {
		t.Fatal(err)
	}
	return m
}
