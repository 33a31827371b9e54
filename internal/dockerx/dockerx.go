// Package dockerx owns talking to the Docker engine for proxybench: finding
// the stack's containers by their compose labels, starting, stopping,
// pausing and signalling them, reading their logs and asking a running proxy for the real
// version of its binary, on one engine or, on a Docker Swarm, on the engine
// of each node (NewCluster). It negotiates the API version because the engine
// scripts/engine.sh installs (Debian's 20.10, API 1.41) is older than the
// client library.
package dockerx

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
)

// Compose and proxybench labels the stack sets on its containers.
const (
	LabelProject    = "com.docker.compose.project"
	LabelService    = "com.docker.compose.service"
	LabelGCTrace    = "proxybench.gctrace"
	LabelRole       = "proxybench.role"
	LabelVersionCmd = "proxybench.version-cmd"
)

// Container is what proxybench needs to know about one container.
type Container struct {
	ID      string
	Name    string // without the leading '/'
	Service string // compose service, "" when not a compose container
	Image   string // image reference as given (e.g. proxybench/caddy:v2.11.9)
	ImageID string // sha256:...
	State   string // created, running, paused, restarting, exited, dead
	Labels  map[string]string
	Running bool // true while running, also when paused
	// StartedAt is when the current (or last) process started; zero when
	// never started. With ID it names one process lifetime.
	StartedAt time.Time
	// FinishedAt is when the previous process exited; zero when none has.
	// Log lines after it belong to the current process.
	FinishedAt time.Time
	Tty        bool // logs are a raw stream, not multiplexed
	// Pid is the container's main process as the engine's host sees it
	// (State.Pid); 0 when not running, and in List, which inspects nothing.
	Pid int
	// Cpuset is the CPUs it may run on (HostConfig.CpusetCpus), "" for
	// every CPU; CPUs its CPU quota in cores (NanoCpus, else CpuQuota /
	// CpuPeriod), 0 for none. Empty in List.
	Cpuset string
	CPUs   float64
	// Binds are its bind mounts: the host's source by the destination in
	// the container. Empty in List.
	Binds map[string]string
	// Node is the Swarm node a task's container runs on (its hostname,
	// else its node id); "" for a container that is not a Swarm task.
	// NodeAddr is that node's address (what it published ports on), and
	// OtherNode whether it is another node than the one whose engine New
	// connected to (NewCluster reaches such nodes' engines).
	Node      string
	NodeAddr  string
	OtherNode bool
	// Cmd is the command its process was started with (path and
	// arguments) and Env that process's environment; Inspect only.
	Cmd []string
	Env []string
	// ExitCode and OOMKilled say how its last process ended (Inspect
	// only; see ExitInfo).
	ExitCode  int
	OOMKilled bool
}

// ExitInfo says how a container that is not running ended, e.g. "code
// 137, OOM killed"; "" while it runs or when it never ran.
func (c Container) ExitInfo() string {
	if c.Running || c.FinishedAt.IsZero() {
		return ""
	}
	s := "code " + strconv.Itoa(c.ExitCode)
	if c.OOMKilled {
		s += ", OOM killed"
	}
	return s
}

// EngineVersion is the engine's version and API version, e.g. "20.10.24
// (API 1.41)".
func (c *Client) EngineVersion(ctx context.Context) (string, error) {
	v, err := c.api.ServerVersion(ctx)
	if err != nil {
		return "", fmt.Errorf("docker version: %w", err)
	}
	return v.Version + " (API " + v.APIVersion + ")", nil
}

// Client is a connection to the Docker engine.
type Client struct {
	api *client.Client

	// Of a Swarm manager connected with NewCluster: this engine's node id,
	// the engines of the other nodes, and which engine each container
	// listed is on (a container not listed is asked of api).
	self    string
	others  []*engine
	ownerMu sync.Mutex
	owner   map[string]*engine

	nodesMu sync.Mutex
	nodes   map[string]nodeInfo // Swarm node id -> what the manager says of it
}

// New connects to the engine named by the environment (DOCKER_HOST etc.,
// default the local socket) and pings it, so a missing engine fails here
// with a message saying what to do rather than at first use.
func New(ctx context.Context) (*Client, error) {
	api, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := api.Ping(pctx); err != nil {
		api.Close()
		return nil, fmt.Errorf("docker engine at %s not reachable (is dockerd running? try `docker info`): %w", api.DaemonHost(), err)
	}
	return &Client{api: api}, nil
}

// Close releases the connections.
func (c *Client) Close() error {
	for _, e := range c.others {
		e.api.Close()
	}
	return c.api.Close()
}

// Ping checks the engine is there; used to wait for it to come back.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.api.Ping(ctx)
	return err
}

// IsNotFound reports whether err says the container does not exist.
func IsNotFound(err error) bool { return client.IsErrNotFound(err) }

// IsNotPaused says whether err is the engine refusing to unpause a
// container that is not paused: nothing to do, not a failure. Engine 20.10
// sends it with no error class the client can test, so by its message.
func IsNotPaused(err error) bool { return err != nil && strings.Contains(err.Error(), "is not paused") }

// Containers lists every container, stopped ones included, of the compose
// project, each inspected so StartedAt is exact. Of a Swarm service only
// its current task's containers are listed (currentTask), not the task
// history Swarm keeps.
func (c *Client) Containers(ctx context.Context, project string) ([]Container, error) {
	all, err := c.list(ctx, LabelProject+"="+project)
	if err != nil {
		return nil, err
	}
	var order []string
	by := map[string][]Container{}
	for _, ctr := range all {
		if _, ok := by[ctr.Service]; !ok {
			order = append(order, ctr.Service)
		}
		by[ctr.Service] = append(by[ctr.Service], ctr)
	}
	out := make([]Container, 0, len(all))
	for _, svc := range order {
		out = append(out, currentTask(by[svc])...)
	}
	return out, nil
}

// ContainersWithLabel lists every container carrying the label (key or
// key=value), stopped ones included.
func (c *Client) ContainersWithLabel(ctx context.Context, label string) ([]Container, error) {
	return c.list(ctx, label)
}

func (c *Client) list(ctx context.Context, label string) ([]Container, error) {
	sums, err := c.summaries(ctx, filters.NewArgs(filters.Arg("label", label)))
	if err != nil {
		return nil, fmt.Errorf("list containers with label %s: %w", label, err)
	}
	out := make([]Container, 0, len(sums))
	for _, s := range sums {
		ctr, err := c.Inspect(ctx, s.ID)
		if IsNotFound(err) {
			continue // removed between list and inspect
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ctr)
	}
	return out, nil
}

// Service finds the one container of a compose service.
func (c *Client) Service(ctx context.Context, project, service string) (Container, error) {
	ctrs, err := c.Containers(ctx, project)
	if err != nil {
		return Container{}, err
	}
	var found []Container
	for _, ctr := range ctrs {
		if ctr.Service == service {
			found = append(found, ctr)
		}
	}
	switch len(found) {
	case 0:
		return Container{}, fmt.Errorf("no container for service %q in compose project %q (is the stack up? `make up`)", service, project)
	case 1:
		return found[0], nil
	default:
		return Container{}, fmt.Errorf("%d containers for service %q in compose project %q; proxybench expects one", len(found), service, project)
	}
}

// Labels Docker Swarm puts on a task's container: its task, and the node
// that runs it.
const (
	LabelSwarmTask = "com.docker.swarm.task.id"
	LabelSwarmNode = "com.docker.swarm.node.id"
)

// nodeInfo is what the lab reads of a Swarm node.
type nodeInfo struct {
	name string // hostname, else the node id
	addr string // Status.Addr, "" when unknown
}

// node is a Swarm node's hostname and address, asked once; only a
// manager can tell, so on a worker node (or an error) the name is the node
// id and the address unknown.
func (c *Client) node(ctx context.Context, id string) nodeInfo {
	c.nodesMu.Lock()
	defer c.nodesMu.Unlock()
	if n, ok := c.nodes[id]; ok {
		return n
	}
	n := nodeInfo{name: id}
	if sn, _, err := c.api.NodeInspectWithRaw(ctx, id); err == nil {
		if sn.Description.Hostname != "" {
			n.name = sn.Description.Hostname
		}
		n.addr = sn.Status.Addr
	}
	if c.nodes == nil {
		c.nodes = map[string]nodeInfo{}
	}
	c.nodes[id] = n
	return n
}

// currentTask narrows a service's containers to its current one when they
// are Swarm tasks: Swarm keeps the containers of replaced or failed tasks
// (its task history) beside the live one. The live ones are kept; when
// none is live, the one started last (the service's latest task, dead).
// Containers that are not all Swarm tasks are returned as they are.
func currentTask(ctrs []Container) []Container {
	if len(ctrs) < 2 {
		return ctrs
	}
	var live []Container
	last := ctrs[0]
	for _, c := range ctrs {
		if c.Labels[LabelSwarmTask] == "" {
			return ctrs
		}
		if c.Running || c.State == "restarting" || c.State == "created" {
			live = append(live, c)
		}
		if c.StartedAt.After(last.StartedAt) {
			last = c
		}
	}
	if len(live) == 0 {
		return []Container{last}
	}
	return live
}

// Inspect reads one container's current state.
func (c *Client) Inspect(ctx context.Context, id string) (Container, error) {
	r, err := c.on(id).ContainerInspect(ctx, id)
	if err != nil {
		return Container{}, fmt.Errorf("inspect container %s: %w", short(id), err)
	}
	ctr := Container{ID: r.ID, Name: strings.TrimPrefix(r.Name, "/"), ImageID: r.Image}
	if r.Path != "" {
		ctr.Cmd = append([]string{r.Path}, r.Args...)
	}
	if r.Config != nil {
		ctr.Env = r.Config.Env
		ctr.Image = r.Config.Image
		ctr.Labels = r.Config.Labels
		ctr.Service = r.Config.Labels[LabelService]
		ctr.Tty = r.Config.Tty
	}
	if h := r.HostConfig; h != nil {
		ctr.Cpuset = h.CpusetCpus
		switch {
		case h.NanoCPUs > 0:
			ctr.CPUs = float64(h.NanoCPUs) / 1e9
		case h.CPUQuota > 0:
			period := h.CPUPeriod
			if period <= 0 {
				period = 100000 // the kernel's default CFS period, µs
			}
			ctr.CPUs = float64(h.CPUQuota) / float64(period)
		}
	}
	for _, m := range r.Mounts {
		if m.Type == "bind" {
			if ctr.Binds == nil {
				ctr.Binds = map[string]string{}
			}
			ctr.Binds[m.Destination] = m.Source
		}
	}
	if id := ctr.Labels[LabelSwarmNode]; id != "" {
		n := c.node(ctx, id)
		ctr.Node, ctr.NodeAddr, ctr.OtherNode = n.name, n.addr, c.self != "" && id != c.self
	}
	if r.State != nil {
		ctr.State = r.State.Status
		ctr.Running = r.State.Running
		ctr.StartedAt = parseTime(r.State.StartedAt)
		ctr.FinishedAt = parseTime(r.State.FinishedAt)
		ctr.ExitCode, ctr.OOMKilled = r.State.ExitCode, r.State.OOMKilled
		if r.State.Running && c.onThisMachine(id) {
			ctr.Pid = r.State.Pid
		}
	}
	return ctr, nil
}

// Stop stops a container, killing it after timeout.
func (c *Client) Stop(ctx context.Context, id string, timeout time.Duration) error {
	secs := int(timeout.Round(time.Second) / time.Second)
	if err := c.on(id).ContainerStop(ctx, id, container.StopOptions{Timeout: &secs}); err != nil {
		return fmt.Errorf("stop container %s: %w", short(id), err)
	}
	return nil
}

// Start starts a created or stopped container.
func (c *Client) Start(ctx context.Context, id string) error {
	if err := c.on(id).ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return fmt.Errorf("start container %s: %w", short(id), err)
	}
	return nil
}

// Kill sends signal (a name such as KILL or USR1, or a number) to a
// container's main process: KILL ends it at once (what `docker kill` does),
// another signal is the process's to handle.
func (c *Client) Kill(ctx context.Context, id, signal string) error {
	if err := c.on(id).ContainerKill(ctx, id, signal); err != nil {
		return fmt.Errorf("signal %s to container %s: %w", signal, short(id), err)
	}
	return nil
}

// freezeTries is how often Pause asks the engine to freeze a container
// whose cgroup v1 freezer reported busy.
const freezeTries = 3

// Pause freezes every process of a container. Under cgroup v1 the kernel
// may fail a freeze while a task of the group forks (EBUSY, which runc
// reports as "unable to freeze" after its own retries); the container is
// then left thawed, so Pause asks again, up to freezeTries times 100 ms
// apart, before it reports the error.
func (c *Client) Pause(ctx context.Context, id string) error {
	var err error
	for try := 1; try <= freezeTries; try++ {
		if err = c.on(id).ContainerPause(ctx, id); err == nil || !strings.Contains(err.Error(), "unable to freeze") || try == freezeTries {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pause container %s: %w", short(id), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		return fmt.Errorf("pause container %s: %w", short(id), err)
	}
	return nil
}

// Unpause thaws a paused container.
func (c *Client) Unpause(ctx context.Context, id string) error {
	if err := c.on(id).ContainerUnpause(ctx, id); err != nil {
		return fmt.Errorf("unpause container %s: %w", short(id), err)
	}
	return nil
}

// Logs opens a container's log stream from since (inclusive, the engine's
// semantics) with an RFC 3339 timestamp before every line. Unless the
// container has a TTY the stream is multiplexed (see logsource). follow
// keeps it open until the container stops or ctx ends.
func (c *Client) Logs(ctx context.Context, id string, since time.Time, follow bool) (io.ReadCloser, error) {
	opts := container.LogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true, Follow: follow}
	if !since.IsZero() {
		opts.Since = since.UTC().Format(time.RFC3339Nano)
	}
	rc, err := c.on(id).ContainerLogs(ctx, id, opts)
	if err != nil {
		return nil, fmt.Errorf("logs of container %s: %w", short(id), err)
	}
	return rc, nil
}

// List lists the containers, stopped ones included, that carry every
// label given (key or key=value), from the engine's summary: cheaper than
// Containers because nothing is inspected, so StartedAt, FinishedAt and Tty
// are left zero.
func (c *Client) List(ctx context.Context, labels ...string) ([]Container, error) {
	args := filters.NewArgs()
	for _, l := range labels {
		args.Add("label", l)
	}
	sums, err := c.summaries(ctx, args)
	if err != nil {
		return nil, fmt.Errorf("list containers with labels %s: %w", strings.Join(labels, ","), err)
	}
	out := make([]Container, 0, len(sums))
	for _, s := range sums {
		ctr := Container{ID: s.ID, Image: s.Image, ImageID: s.ImageID, State: string(s.State), Labels: s.Labels,
			Service: s.Labels[LabelService], Running: s.State == container.StateRunning || s.State == container.StatePaused}
		if len(s.Names) > 0 {
			ctr.Name = strings.TrimPrefix(s.Names[0], "/")
		}
		out = append(out, ctr)
	}
	return out, nil
}

// parseTime reads the engine's RFC 3339 times; its zero time
// ("0001-01-01T00:00:00Z") becomes time.Time{}.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
