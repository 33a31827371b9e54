package dockerx

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
)

// LabelEngine is the Swarm node label that gives the address of the node's
// own Docker engine, in DOCKER_HOST's form (unix:///run/docker.sock,
// tcp://10.0.0.5:2376). A Swarm manager schedules tasks on every node but
// answers container calls only for its own; NewCluster reaches the others
// through this label (scripts/swarm.sh sets it on each node).
const LabelEngine = "proxybench.engine"

// engine is the Docker engine of one Swarm node other than the one New
// connected to.
type engine struct {
	node string // Swarm node id
	addr string // its LabelEngine
	api  *client.Client
}

// NewCluster is New, and when the engine is a Swarm manager also the
// engines of its other nodes, by their LabelEngine labels: Containers then
// lists the containers of every node, and every call on a container goes
// to the engine that runs it. A node whose engine does not answer fails
// here, naming the node and the address; a node without the label is left
// out (its containers are not seen) unless it runs nothing of the lab.
func NewCluster(ctx context.Context) (*Client, error) {
	c, err := New(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.joinNodes(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Client) joinNodes(ctx context.Context) error {
	info, err := c.api.Info(ctx)
	if err != nil {
		return fmt.Errorf("docker info on %s: %w", c.api.DaemonHost(), err)
	}
	if info.Swarm.NodeID == "" {
		return nil // not a Swarm node
	}
	c.self = info.Swarm.NodeID
	if !info.Swarm.ControlAvailable {
		return nil // a worker: it knows no other node
	}
	nodes, err := c.api.NodeList(ctx, types.NodeListOptions{})
	if err != nil {
		return fmt.Errorf("list the swarm's nodes on %s: %w", c.api.DaemonHost(), err)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	for _, n := range nodes {
		addr := n.Spec.Labels[LabelEngine]
		if n.ID == c.self || addr == "" {
			continue
		}
		api, err := client.NewClientWithOpts(client.WithHost(addr), client.WithAPIVersionNegotiation())
		if err != nil {
			return fmt.Errorf("swarm node %s: its %s label %q: %w (give the engine's address as DOCKER_HOST takes it, e.g. unix:///run/docker.sock)", n.Description.Hostname, LabelEngine, addr, err)
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = api.Ping(pctx)
		cancel()
		if err != nil {
			api.Close()
			return fmt.Errorf("swarm node %s: its engine at %s (label %s) does not answer: %w", n.Description.Hostname, addr, LabelEngine, err)
		}
		c.others = append(c.others, &engine{node: n.ID, addr: addr, api: api})
	}
	return nil
}

// summaries lists the containers matching args on every engine, noting
// which engine each is on.
func (c *Client) summaries(ctx context.Context, args filters.Args) ([]container.Summary, error) {
	opts := container.ListOptions{All: true, Filters: args}
	out, err := c.api.ContainerList(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, e := range c.others {
		sums, err := e.api.ContainerList(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("on the engine of swarm node %s (%s): %w", c.node(ctx, e.node).name, e.addr, err)
		}
		c.ownerMu.Lock()
		if c.owner == nil {
			c.owner = map[string]*engine{}
		}
		for _, s := range sums {
			c.owner[s.ID] = e
		}
		c.ownerMu.Unlock()
		out = append(out, sums...)
	}
	return out, nil
}

// ownerOf is the engine a container was listed on; nil for New's own.
func (c *Client) ownerOf(id string) *engine {
	c.ownerMu.Lock()
	defer c.ownerMu.Unlock()
	return c.owner[id]
}

// on is the API of the engine that runs container id.
func (c *Client) on(id string) *client.Client {
	if e := c.ownerOf(id); e != nil {
		return e.api
	}
	return c.api
}

// onThisMachine reports whether container id's engine runs on this
// machine, so that its State.Pid names a process here (cgroup and /proc
// readings): New's own engine, or another node's reached through a unix
// socket. An engine reached over the network is taken as another
// machine's.
func (c *Client) onThisMachine(id string) bool {
	e := c.ownerOf(id)
	return e == nil || isUnix(e.addr)
}

func isUnix(addr string) bool {
	u, err := url.Parse(addr)
	return err == nil && strings.EqualFold(u.Scheme, "unix")
}
