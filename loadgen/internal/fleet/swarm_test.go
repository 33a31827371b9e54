package fleet

import "testing"

// A worker launched as a Swarm service listens on every address of its
// node; it is reached at the node's address, on its port, and a node the
// manager gives no address for is an error, not a guess.
func TestSwarmWorkerOnItsNode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ addr, node, want string }{
		{"0.0.0.0:41234", "198.18.0.4", "198.18.0.4:41234"},
		{"[::]:41234", "198.18.0.2", "198.18.0.2:41234"},
		{"0.0.0.0:41234", "fd00::4", "[fd00::4]:41234"},
	} {
		if got, err := onNode(c.addr, c.node); err != nil || got != c.want {
			t.Errorf("onNode(%q, %q) = %q, %v; want %q", c.addr, c.node, got, err, c.want)
		}
	}
	for _, c := range []struct{ addr, node string }{{"0.0.0.0:41234", ""}, {"no-port", "198.18.0.4"}} {
		if got, err := onNode(c.addr, c.node); err == nil {
			t.Errorf("onNode(%q, %q) = %q: want an error", c.addr, c.node, got)
		}
	}
}
