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
	na := func(proxy, scenario, reason string) manifest.Cell {
		sk := &manifest.Skip{Kind: manifest.SkipNotApplicable, Reason: reason}
		return manifest.Cell{Key: cellid.Key{Proxy: proxy, Scenario: scenario}, Status: manifest.CellSkipped, Reason: sk.Text(), Skip: sk}
	}
	tests := []struct {
		name  string
		cells []manifest.Cell
		want  []Support
	}{
		{"ran is native", []manifest.Cell{cell("nginx", "auth", manifest.CellOK, "")},
			[]Support{{Proxy: "nginx", Scenario: "auth", Status: SupportNative}}},
		{"n/a keeps its reason", []manifest.Cell{na("traefik", "auth", "no native API-key check")},
			[]Support{{Proxy: "traefik", Scenario: "auth", Status: SupportNA, Reason: "no native API-key check"}}},
		{"a failed or broken cell is still native", []manifest.Cell{
			cell("caddy", "slow", manifest.CellFailed, "proxy container proxybench-caddy exited (code 137, OOM killed) during the cell"),
			{Key: cellid.Key{Proxy: "caddy", Scenario: "churn"}, Status: manifest.CellSkipped, Reason: "preflight: connection refused",
				Skip: &manifest.Skip{Kind: manifest.SkipPreflight, Reason: "preflight: connection refused"}}},
			[]Support{{Proxy: "caddy", Scenario: "slow", Status: SupportNative}, {Proxy: "caddy", Scenario: "churn", Status: SupportNative}}},
		{"one entry per pair across origins and repeats", []manifest.Cell{
			na("caddy", "ratelimit", "plugin"), na("caddy", "ratelimit", "plugin")},
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
