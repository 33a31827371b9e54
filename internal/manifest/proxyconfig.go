package manifest

// ProxyConfig is what one running proxy said about its own configuration
// at the run's start (package proxyconf): the parity rows' values, read
// from the proxy itself, not from the repository's files.
type ProxyConfig struct {
	// Source is how it was read, e.g. "nginx -T" or "Caddy's admin API
	// /config/".
	Source string `json:"source"`
	// Values are by parity row (proxyconf.Rows).
	Values map[string]ConfigValue `json:"values,omitempty"`
	// Error is why nothing could be read; Values is then empty.
	Error string `json:"error,omitempty"`
}

// ConfigValue is one parity row of one proxy: Value in the rows' common
// form (durations as "60s", sizes as numbers, "on"/"off", versions as
// "1.3"), From the setting it came from ("keepalive 256 (upstream fast)",
// "default"). NA says the proxy has no such setting or did not report it:
// its row is not compared.
type ConfigValue struct {
	Value string `json:"value"`
	From  string `json:"from,omitempty"`
	NA    bool   `json:"na,omitempty"`
}
