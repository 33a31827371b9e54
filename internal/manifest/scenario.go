package manifest

// ScenarioData holds a cell's scenario-specific account (docs/scenarios.md).
// Counts are of the measured window, like the cell's own; rates divide them
// by the window (End - Start).
type ScenarioData struct {
	// auth: the traffic mix, each variant counted apart.
	Variants map[string]VariantCount `json:"variants,omitempty"`
	// AuthWrong counts the requests answered against their key: a valid key
	// without 2xx or an invalid key without 401 (0 = the proxy was exact).
	AuthWrong *int64 `json:"auth_wrong,omitempty"`

	// ratelimit: the configured limit and what the proxy let through.
	LimitRPS    float64 `json:"limit_rps,omitempty"`
	LimitBurst  float64 `json:"limit_burst,omitempty"`
	OfferedRPS  float64 `json:"offered_rps,omitempty"`  // requests sent per second of the window
	AcceptedRPS float64 `json:"accepted_rps,omitempty"` // 2xx per second, burst included
	LimitedRPS  float64 `json:"limited_rps,omitempty"`  // 429 per second (never errors)
	// Precision is (2xx - burst) / window / limit: 1 is exact, < 1 too strict.
	Precision float64 `json:"precision,omitempty"`

	// payload and upload: expected body size and what moved.
	BodyBytes   int64   `json:"body_bytes,omitempty"`    // every 2xx carries this many body bytes
	BytesPerSec float64 `json:"bytes_per_sec,omitempty"` // response body bytes per second
	UploadBytes int64   `json:"upload_bytes,omitempty"`  // request body per request

	// slow: the origin delay and the proxy's memory while holding connections.
	DelayS float64      `json:"delay_seconds,omitempty"`
	Memory *ProxyMemory `json:"proxy_memory,omitempty"`

	// churn: connections per second and the TIME_WAIT pressure they leave.
	Churn *Churn `json:"churn,omitempty"`

	// faults: what the lab did to a replica and what it cost (faults.go).
	Faults *Faults `json:"faults,omitempty"`
}

// VariantCount is one part of a traffic mix.
type VariantCount struct {
	Share    float64          `json:"share"` // planned share of rate (open) or connections (closed)
	Want     int              `json:"want"`  // 200 (any 2xx) or 401
	Requests int64            `json:"requests"`
	Errors   int64            `json:"errors"`
	Codes    map[string]int64 `json:"codes"`
}

// ProxyMemory is the proxy container's working set (cgroup usage minus
// inactive file pages, as cAdvisor's container_memory_working_set_bytes)
// before the cell and at its peak while holding connections.
type ProxyMemory struct {
	Container    string  `json:"container"`
	IdleBytes    int64   `json:"idle_bytes"`
	PeakBytes    int64   `json:"peak_bytes"`
	Held         int     `json:"held_connections"` // client connections held at once (peak in flight)
	PerConnBytes float64 `json:"per_connection_bytes"`
	Samples      int     `json:"samples"`
	Unavailable  string  `json:"unavailable,omitempty"` // why there is no measurement
}

// Churn is connection pressure after a churn cell. TIME_WAIT sockets live
// 60 s on Linux, so the count right after the window reflects up to the last
// minute of closed connections.
type Churn struct {
	ConnsPerSec       float64 `json:"connections_per_sec"`
	TimeWait          int     `json:"time_wait"`            // all TCP sockets in TIME_WAIT on the host
	TimeWaitProxyPort int     `json:"time_wait_proxy_port"` // of them, to or from the proxy's port
	PortRangeLow      int     `json:"port_range_low"`       // net.ipv4.ip_local_port_range
	PortRangeHigh     int     `json:"port_range_high"`
	TwReuse           int     `json:"tcp_tw_reuse"` // net.ipv4.tcp_tw_reuse (2 = loopback only)
	// PortPressure is TimeWaitProxyPort over the ports one client address
	// has towards one destination: at 1 new connections wait for a port.
	PortPressure float64 `json:"port_pressure"`
}
