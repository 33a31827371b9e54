package scenario

import "net/http"

// The tls-handshake pair: a new TLS connection per request (HTTP/1.1 over
// TLS), every handshake full in one and resumed (the cell's connections
// share a session cache: TLS 1.3 tickets) in the other, so the report
// shows the rate of each apart and the TLS cost table the full
// handshakes each proxy sustains per core. Like churn, the runner reads
// the TIME_WAIT sockets the connections leave (scenario_data.churn).
var (
	tlsHandshakeFull    = tlsHandshakeScenario(TLSHandshakeFull, 82, true)
	tlsHandshakeResumed = tlsHandshakeScenario(TLSHandshakeResumed, 83, false)
)

func init() {
	register(&tlsHandshakeFull)
	register(&tlsHandshakeResumed)
}

// TLSHandshakeGroup is the group of the two handshake scenarios.
const TLSHandshakeGroup = "tls-handshake"

func tlsHandshakeScenario(name string, rank int, full bool) Scenario {
	about := "a new TLS connection per request, every handshake full (no session resumption)"
	if !full {
		about = "a new TLS connection per request, resuming the session (TLS 1.3 tickets shared by the cell's connections)"
	}
	return Scenario{
		Name:              name,
		About:             about,
		Rank:              rank,
		Groups:            []string{TLSHandshakeGroup},
		Method:            http.MethodGet,
		Path:              func(o string, _ Settings) string { return "/" + o + "/" },
		Proto:             "tls",
		NewConnPerRequest: true,
		NoResumption:      full,
		Probes:            ProbeTimeWait, // as churn: the connections' TIME_WAIT
		Account:           churnAccount,
		Report:            tlsTable,
	}
}

// TLSHandshakeFull names the scenario whose cells measure the full
// handshakes a proxy sustains (the TLS cost table's handshakes per core);
// TLSHandshakeResumed the one whose cells resume their sessions. The
// report sets the handshake latency of the one against the other's.
const (
	TLSHandshakeFull    = "tls-handshake-full"
	TLSHandshakeResumed = "tls-handshake-resumed"
)
