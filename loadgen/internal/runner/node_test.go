package runner

import (
	"testing"

	"proxybench/internal/dockerx"
)

// A proxy on another Swarm node is asked at that node's address, on its
// port; one on this node, or not a Swarm task, keeps the target's host,
// and a proxy that moves back is asked here again.
func TestNodeHostsSendTrafficToTheProxysNode(t *testing.T) {
	t.Parallel()
	var n nodeHosts
	target := n.wrap(func(proxy string) (string, error) {
		return map[string]string{"nginx": "http://127.0.0.1:8881", "caddy": "http://127.0.0.1:8884/x"}[proxy], nil
	})
	n.note("nginx", &dockerx.Container{Node: "pbswarm-2", NodeAddr: "198.18.0.3", OtherNode: true})
	n.note("caddy", &dockerx.Container{Node: "vm", NodeAddr: "198.18.0.2"})
	for proxy, want := range map[string]string{"nginx": "http://198.18.0.3:8881", "caddy": "http://127.0.0.1:8884/x"} {
		if got, err := target(proxy); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", proxy, got, err, want)
		}
	}
	n.note("nginx", &dockerx.Container{Node: "vm", NodeAddr: "198.18.0.2"})
	if got, _ := target("nginx"); got != "http://127.0.0.1:8881" {
		t.Errorf("nginx back on this node: %q, want the target's own host", got)
	}
}
