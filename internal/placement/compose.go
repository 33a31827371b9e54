package placement

import "strconv"

// Var is one compose variable and its value.
type Var struct{ Name, Value string }

// Env is the placement as the variables compose/docker-compose.yml reads,
// in a fixed order. scripts/stack.sh sets them from `loadgen placement`
// before compose up, so compose creates every container with its cpuset;
// a changed value changes the container's configuration, which makes
// compose recreate it. An empty cpuset means no cpuset. Without them the
// compose file falls back to placement none's values.
func (p Placement) Env() []Var {
	return []Var{
		{"PROXY_CPUSET", p.Proxy.String()},
		{"PROXY_CPUS", strconv.FormatFloat(p.ProxyCPUs, 'f', -1, 64)},
		{"PROXY_WORKERS", strconv.Itoa(p.Workers)},
		{"ORIGIN_CPUSET", p.Origins.String()},
		{"ORIGIN_WORKERS", strconv.Itoa(p.OriginWorkers)},
		{"INFRA_CPUSET", p.Observability.String()},
	}
}

// WorkerSetting is the setting that gives a proxy its worker count
// (docs/parity.md): nginx's worker_processes, HAProxy's nbthread, the Go
// proxies' GOMAXPROCS; the custom slot's image decides its own.
func WorkerSetting(proxy string, workers int) string {
	n := strconv.Itoa(workers)
	switch proxy {
	case "nginx":
		return "worker_processes " + n
	case "haproxy":
		return "nbthread " + n
	case "traefik", "caddy":
		return "GOMAXPROCS=" + n
	}
	return "user's image"
}
