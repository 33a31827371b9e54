package report

import (
	"proxybench/internal/manifest"
)

// Environment describes what ran.
type Environment struct {
	Proxies []ProxyEnv        `json:"proxies"`
	Host    map[string]string `json:"host,omitempty"`
	// Placement is the run's CPU placement, planned and measured
	// (placement.go); nil when the manifest has none.
	Placement *Placement `json:"placement,omitempty"`
	// Ceiling is the instrument's own ceiling the cells are judged against
	// (instrument_ceiling); nil when the manifest has none.
	Ceiling *manifest.Ceiling `json:"instrument_ceiling,omitempty"`
	// OpenCeiling is the open-loop engine's ceiling, what open-loop cells
	// are held to; nil when the run had none.
	OpenCeiling *manifest.Ceiling `json:"instrument_open_ceiling,omitempty"`
	// Isolation states what pausing the other proxies isolates and what
	// it does not.
	Isolation Isolation `json:"isolation"`
	// Parity is the parity settings the running proxies reported at the
	// run's start; nil when the manifest has none.
	Parity *Parity `json:"parity,omitempty"`
}

// Parity is the parity table read from the running proxies (package
// proxyconf): each proxy's values by row, and a warning for each row on
// which they differ.
type Parity struct {
	Proxies  []string                        `json:"proxies"`
	Configs  map[string]manifest.ProxyConfig `json:"configs"`
	Warnings []string                        `json:"warnings,omitempty"`
}

// ProxyEnv is one proxy's version and limits, read from the running stack.
type ProxyEnv struct {
	Proxy         string `json:"proxy"`
	Image         string `json:"image,omitempty"`
	Version       string `json:"version,omitempty"`
	CPULimitCores Num    `json:"cpu_limit_cores"`
	MemLimitBytes Num    `json:"mem_limit_bytes"`
	Workers       string `json:"workers"` // the parity setting
}
