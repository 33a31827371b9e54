package report

import (
	"reflect"
	"testing"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
)

func TestSupportMatrix(t *testing.T) {
	t.Parallel()
	cell := func(proxy, scenario, status, reason string) manifest.Cell {
		return manifest.Cell{Key: cellid.Key{Proxy: proxy, Scenario: scenario}, Status: status, Reason: reason}
	}
	tests := []struct {
		name  string
		cells []manifest.Cell
		want  []Support
	}{
		{"ran is native", []manifest.Cell{cell("nginx", "auth", manifest.CellOK, "")},
			[]Support{{Proxy: "nginx", Scenario: "auth", Status: SupportNative}}},
		{"n/a keeps its reason", []manifest.Cell{cell("traefik", "auth", manifest.CellSkipped, "n/a: no native API-key check")},
			[]Support{{Proxy: "traefik", Scenario: "auth", Status: SupportNA, Reason: "no native API-key check"}}},
		{"a failed or broken cell is still native", []manifest.Cell{
			cell("caddy", "slow", manifest.CellFailed, "proxy container proxybench-caddy exited (code 137, OOM killed) during the cell"),
			cell("caddy", "churn", manifest.CellSkipped, "preflight: connection refused")},
			[]Support{{Proxy: "caddy", Scenario: "slow", Status: SupportNative}, {Proxy: "caddy", Scenario: "churn", Status: SupportNative}}},
		{"one entry per pair across origins and repeats", []manifest.Cell{
			cell("caddy", "ratelimit", manifest.CellSkipped, "n/a: plugin"), cell("caddy", "ratelimit", manifest.CellSkipped, "n/a: plugin")},
			[]Support{{Proxy: "caddy", Scenario: "ratelimit", Status: SupportNA, Reason: "plugin"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := SupportMatrix(&manifest.Manifest{Cells: tt.cells})
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if SupportMatrix(nil) != nil {
		t.Error("nil manifest gave a matrix")
	}
}
