package scenario

import (
	"strings"
	"testing"

	"proxybench/internal/manifest"
)

func TestChurn(t *testing.T) {
	t.Parallel()
	sh := churn.Resolve(defaults)
	if !sh.NewConn || !churn.NewConnPerRequest || churn.Probes != ProbeTimeWait || churn.Path("node", defaults) != "/node/" || churn.Skip("haproxy") != nil {
		t.Errorf("shape %+v probes %b", sh, churn.Probes)
	}
	probe := &manifest.Churn{TimeWait: 900, TimeWaitProxyPort: 800, PortRangeLow: 32768, PortRangeHigh: 60999, TwReuse: 2, PortPressure: 0.0283}
	d := churnAccount(sh, Counts{WindowS: 4, Requests: 3990, Errors: 10, Churn: probe})
	if d == nil || d.Churn == nil || d.Churn.ConnsPerSec != 1000 || d.Churn.TimeWait != 900 || probe.ConnsPerSec != 0 {
		t.Fatalf("account %+v (the probe's own value must stay as read)", d)
	}
	fs, ok := row(t, churnTable, ReportCell{Name: "c", Data: d})
	if got := strings.Join(texts(fs), "|"); !ok || got != "c|1000|800|900|32768-60999|2.8 %|2" {
		t.Errorf("row %s", got)
	}
	// Stopped before the probe: an account without numbers, and no row.
	if d := churnAccount(sh, Counts{}); d == nil || d.Churn != nil {
		t.Errorf("account without a probe %+v", d)
	}
	if _, ok := row(t, churnTable, ReportCell{Data: &manifest.ScenarioData{}}); ok {
		t.Error("a row without a probe")
	}
}
