package dockerx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-connections/nat"
)

// RunSpec is a container to start, as `docker run -d` would: the studies'
// own servers.
type RunSpec struct {
	Name    string
	Image   string
	Labels  map[string]string
	Network string   // "host", "bridge" or "none"
	Publish []string // bridge: `docker run -p` values, e.g. "127.0.0.1::8080"
	CPUs    float64  // CPU quota in cores (0 = none)
	Cpuset  string   // CPUs it may run on ("" = any)
	Binds   []string // `docker run -v` values, "HOST:CONTAINER[:ro]"
	Env     []string // "KEY=VALUE"
	Cmd     []string // the command after the image ("" = the image's)
}

// Run creates and starts s and returns its id. A container already named
// s.Name (left by a killed run) is removed first.
func (c *Client) Run(ctx context.Context, s RunSpec) (string, error) {
	exposed, bindings, err := nat.ParsePortSpecs(s.Publish)
	if err != nil {
		return "", fmt.Errorf("container %s: ports %q: %w", s.Name, s.Publish, err)
	}
	cfg := &container.Config{Image: s.Image, Labels: s.Labels, Env: s.Env, Cmd: s.Cmd, ExposedPorts: exposed}
	hc := &container.HostConfig{NetworkMode: container.NetworkMode(s.Network), PortBindings: bindings, Binds: s.Binds,
		Resources: container.Resources{NanoCPUs: int64(s.CPUs * 1e9), CpusetCpus: s.Cpuset}}
	if err := c.Remove(ctx, s.Name); err != nil {
		return "", err
	}
	made, err := c.api.ContainerCreate(ctx, cfg, hc, nil, nil, s.Name)
	if err != nil {
		return "", fmt.Errorf("create %s from %s: %w", s.Name, s.Image, err)
	}
	if err := c.api.ContainerStart(ctx, made.ID, container.StartOptions{}); err != nil {
		_ = c.Remove(context.WithoutCancel(ctx), made.ID)
		return "", fmt.Errorf("start %s: %w", s.Name, err)
	}
	return made.ID, nil
}

// RunOnce runs s to its end, as `docker run --rm` would, and returns what
// it wrote to stdout (trimmed); its exit code other than 0 is an error
// carrying its stderr.
func (c *Client) RunOnce(ctx context.Context, s RunSpec) (string, error) {
	id, err := c.Run(ctx, s)
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Remove(context.WithoutCancel(ctx), id) }()
	waitC, errC := c.api.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	var code int64
	select {
	case w := <-waitC:
		code = w.StatusCode
	case err := <-errC:
		return "", fmt.Errorf("wait for %s: %w", s.Name, err)
	}
	stdout, stderr, err := c.output(ctx, id, "")
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", fmt.Errorf("%s %s: exit code %d: %s", s.Image, strings.Join(s.Cmd, " "), code, strings.TrimSpace(stderr))
	}
	return strings.TrimSpace(stdout), nil
}

// Exec runs argv in container id and returns its stdout and stderr (less
// any gctrace), trimmed; an exit code other than 0 is an error.
func (c *Client) Exec(ctx context.Context, id string, argv ...string) (string, error) {
	out, err := c.exec(ctx, id, argv)
	return strings.TrimSpace(out), err
}

// Tail is the last n lines a container wrote, both streams.
func (c *Client) Tail(ctx context.Context, id string, n int) (string, error) {
	stdout, stderr, err := c.output(ctx, id, strconv.Itoa(n))
	return strings.TrimSpace(stdout + stderr), err
}

// output reads a container's logs (the last tail lines; "" = all) by stream.
func (c *Client) output(ctx context.Context, id, tail string) (stdout, stderr string, err error) {
	rc, err := c.on(id).ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: tail})
	if err != nil {
		return "", "", fmt.Errorf("logs of %s: %w", short(id), err)
	}
	defer rc.Close()
	if stdout, stderr, err = demuxAll(rc); err != nil {
		return "", "", fmt.Errorf("logs of %s: %w", short(id), err)
	}
	return stdout, stderr, nil
}

// demuxAll reads a multiplexed stream (Demux) to its end, by stream.
func demuxAll(r io.Reader) (stdout, stderr string, err error) {
	var o, e strings.Builder
	err = Demux(r, func(s Stream, p []byte) {
		if s == Stderr {
			e.Write(p)
		} else {
			o.Write(p)
		}
	})
	if err != nil && !errors.Is(err, io.EOF) {
		return "", "", err
	}
	return o.String(), e.String(), nil
}

// ImageID is the id of image ref on the engine; an error when it has none.
func (c *Client) ImageID(ctx context.Context, ref string) (string, error) {
	r, err := c.api.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	return r.ID, nil
}

// HostPort is the 127.0.0.1 port a container publishes its TCP port on.
func (c *Client) HostPort(ctx context.Context, id string, port int) (int, error) {
	r, err := c.on(id).ContainerInspect(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("inspect container %s: %w", short(id), err)
	}
	if r.NetworkSettings != nil {
		for _, b := range r.NetworkSettings.Ports[nat.Port(strconv.Itoa(port)+"/tcp")] {
			if b.HostIP == "127.0.0.1" {
				return strconv.Atoi(b.HostPort)
			}
		}
	}
	return 0, fmt.Errorf("container %s publishes no 127.0.0.1 port for %d/tcp", short(id), port)
}

// RemoveWithLabel removes every container with label (key=value or key),
// running or not, and says how many.
func (c *Client) RemoveWithLabel(ctx context.Context, label string) (int, error) {
	ctrs, err := c.ContainersWithLabel(ctx, label)
	if err != nil {
		return 0, err
	}
	for _, ct := range ctrs {
		if err := c.Remove(ctx, ct.ID); err != nil {
			return 0, err
		}
	}
	return len(ctrs), nil
}
