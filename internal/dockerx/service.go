package dockerx

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/swarm"
)

// ServiceSpec is a one-task Swarm service as the lab runs one: a program
// that must run once, on a node the constraints pick, in the node's own
// network, and never be restarted (a task that dies stays dead, so its
// death is seen).
type ServiceSpec struct {
	Name        string
	Image       string   // present on every node it may run on (never pulled)
	Command     []string // entrypoint and arguments
	Labels      map[string]string
	Constraints []string          // placement, e.g. node.labels.proxybench.role.load==true
	Binds       map[string]string // host path -> path in the container, read-only
}

// Task is the state of a service's one task.
type Task struct {
	State  string // new ... running, complete, failed, shutdown, rejected, orphaned, remove
	Err    string // why it failed, from the engine
	NodeID string
	Done   bool // the task has ended (or can never run)
}

// CreateService creates the service on the swarm (a manager must answer)
// and returns its id.
func (c *Client) CreateService(ctx context.Context, s ServiceSpec) (string, error) {
	var mounts []mount.Mount
	for src, dst := range s.Binds {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: src, Target: dst, ReadOnly: true})
	}
	one := uint64(1)
	grace := 2 * time.Second
	spec := swarm.ServiceSpec{
		Annotations: swarm.Annotations{Name: s.Name, Labels: s.Labels},
		Mode:        swarm.ServiceMode{Replicated: &swarm.ReplicatedService{Replicas: &one}},
		TaskTemplate: swarm.TaskSpec{
			ContainerSpec: &swarm.ContainerSpec{Image: s.Image, Command: s.Command, Hostname: "{{.Node.Hostname}}", Labels: s.Labels, Mounts: mounts, StopGracePeriod: &grace},
			RestartPolicy: &swarm.RestartPolicy{Condition: swarm.RestartPolicyConditionNone},
			Placement:     &swarm.Placement{Constraints: s.Constraints},
			Networks:      []swarm.NetworkAttachmentConfig{{Target: "host"}},
		},
	}
	r, err := c.api.ServiceCreate(ctx, spec, swarm.ServiceCreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create swarm service %s: %w", s.Name, err)
	}
	return r.ID, nil
}

// RemoveService removes a service; its task's container is stopped.
func (c *Client) RemoveService(ctx context.Context, id string) error {
	if err := c.api.ServiceRemove(ctx, id); err != nil && !IsNotFound(err) {
		return fmt.Errorf("remove swarm service %s: %w", short(id), err)
	}
	return nil
}

// ServicesWithLabel lists the ids of the services carrying the label
// (key or key=value).
func (c *Client) ServicesWithLabel(ctx context.Context, label string) ([]string, error) {
	svcs, err := c.api.ServiceList(ctx, swarm.ServiceListOptions{Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return nil, fmt.Errorf("list swarm services with label %s: %w", label, err)
	}
	ids := make([]string, len(svcs))
	for i, s := range svcs {
		ids[i] = s.ID
	}
	return ids, nil
}

// ServiceTask is the state of the service's latest task; State is ""
// while the orchestrator has made none.
func (c *Client) ServiceTask(ctx context.Context, id string) (Task, error) {
	tasks, err := c.api.TaskList(ctx, swarm.TaskListOptions{Filters: filters.NewArgs(filters.Arg("service", id))})
	if err != nil {
		return Task{}, fmt.Errorf("tasks of swarm service %s: %w", short(id), err)
	}
	var last *swarm.Task
	for i := range tasks {
		if last == nil || tasks[i].Meta.CreatedAt.After(last.Meta.CreatedAt) {
			last = &tasks[i]
		}
	}
	if last == nil {
		return Task{}, nil
	}
	st := last.Status.State
	t := Task{State: string(st), Err: last.Status.Err, NodeID: last.NodeID}
	switch st {
	case swarm.TaskStateComplete, swarm.TaskStateFailed, swarm.TaskStateShutdown, swarm.TaskStateRejected, swarm.TaskStateOrphaned, swarm.TaskStateRemove:
		t.Done = true
	}
	return t, nil
}

// ServiceLogs opens the service's log stream (its tasks' stdout and
// stderr, multiplexed: see Demux) through the manager, wherever the task
// runs; follow keeps it open.
func (c *Client) ServiceLogs(ctx context.Context, id string, follow bool) (io.ReadCloser, error) {
	rc, err := c.api.ServiceLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: follow})
	if err != nil {
		return nil, fmt.Errorf("logs of swarm service %s: %w", short(id), err)
	}
	return rc, nil
}

// NodeAddr is a Swarm node's address (what it publishes ports and runs
// host-network tasks on); "" when the manager cannot tell.
func (c *Client) NodeAddr(ctx context.Context, id string) string { return c.node(ctx, id).addr }

// NodeName is a Swarm node's hostname, else its id.
func (c *Client) NodeName(ctx context.Context, id string) string { return c.node(ctx, id).name }
