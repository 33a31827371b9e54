package runner

import (
	"net"
	"net/url"
	"sync"

	"proxybench/internal/dockerx"
	"proxybench/loadgen/internal/routecheck"
)

// nodeHosts sends a proxy's traffic to the node that runs it. On a Swarm
// of several nodes a proxy publishes its ports on its own node only (the
// stack's host publish mode: no routing mesh in the measured path), so a
// proxy on another node than the loadgen's is asked at that node's
// address, on the same port. Other proxies keep the Target's host.
type nodeHosts struct {
	mu   sync.Mutex
	host map[string]string // proxy -> its node's address
}

// note records where the proxy's container runs.
func (n *nodeHosts) note(proxy string, ctr *dockerx.Container) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.host == nil {
		n.host = map[string]string{}
	}
	delete(n.host, proxy)
	if ctr != nil && ctr.OtherNode && ctr.NodeAddr != "" {
		n.host[proxy] = ctr.NodeAddr
	}
}

// wrap is t with each proxy's host replaced by its node's address.
func (n *nodeHosts) wrap(t routecheck.Target) routecheck.Target {
	return func(proxy string) (string, error) {
		base, err := t(proxy)
		if err != nil {
			return base, err
		}
		n.mu.Lock()
		host := n.host[proxy]
		n.mu.Unlock()
		if host == "" {
			return base, nil
		}
		u, err := url.Parse(base)
		if err != nil {
			return base, nil
		}
		if port := u.Port(); port != "" {
			u.Host = net.JoinHostPort(host, port)
		} else {
			u.Host = host
		}
		return u.String(), nil
	}
}
