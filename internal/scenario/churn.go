package scenario

import (
	"fmt"
	"net/http"
	"strconv"

	"proxybench/internal/manifest"
)

// churn opens a new TCP connection for every request; the runner reads the
// TIME_WAIT sockets it leaves right after the window.
var churn = Scenario{
	Name:              "churn",
	About:             "a new TCP connection for every request (Connection: close)",
	Rank:              70,
	Method:            http.MethodGet,
	Path:              func(o string, _ Settings) string { return "/" + o + "/" },
	NewConnPerRequest: true,
	Probes:            ProbeTimeWait,
	Account:           churnAccount,
	Report:            churnTable,
}

func init() { register(&churn) }

// churnAccount is the connection rate and the TIME_WAIT pressure it left.
// A cell whose probe read nothing (stopped first) still has an account,
// an empty one.
func churnAccount(_ Shape, n Counts) *manifest.ScenarioData {
	d := &manifest.ScenarioData{}
	if n.Churn != nil {
		ch := *n.Churn
		ch.ConnsPerSec = n.Rate(n.Requests + n.Errors)
		d.Churn = &ch
	}
	return d
}

var churnTable = &Table{
	Caption: "churn: a new connection per request",
	Header:  []string{"cell", "connections/s", "TIME_WAIT at proxy port", "TIME_WAIT on host", "ephemeral ports", "port pressure", "tcp_tw_reuse"},
	Right:   []bool{false, true, true, true, true, true, true},
	Notes:   []string{"Sampled right after the window; TIME_WAIT lasts 60 s on Linux. Port pressure = TIME_WAIT at the proxy port / ephemeral ports one client address has towards it; at 100 % new connections wait for a port (tcp_tw_reuse 2 lets loopback reuse them)."},
	Row: func(c ReportCell, f Format) ([]Field, bool) {
		sd := c.Data
		if sd == nil || sd.Churn == nil {
			return nil, false
		}
		ch := sd.Churn
		return []Field{text(c.Name), text(fmt.Sprintf("%.0f", ch.ConnsPerSec)), text(f.Int(int64(ch.TimeWaitProxyPort))),
			text(f.Int(int64(ch.TimeWait))), text(fmt.Sprintf("%d-%d", ch.PortRangeLow, ch.PortRangeHigh)),
			text(f.Pct(ch.PortPressure)), text(strconv.Itoa(ch.TwReuse))}, true
	},
}
