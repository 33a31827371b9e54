package dockerx

import (
	"context"
	"fmt"
	"maps"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
)

// Clone is what a copy of a container changes: the duet's candidate is its
// proxy's container with another image, other config files and another
// compose service name; everything else (cpuset, quota, memory, ulimits,
// environment, command, network mode) is the original's.
type Clone struct {
	Name    string            // the copy's container name
	Image   string            // "" = the original's image (by id)
	Labels  map[string]string // set on top of the original's labels
	Mounts  map[string]string // bind mount sources by destination, replacing the original's
	NoProbe bool              // no healthcheck (the original's probes its own ports)
}

// CloneContainer creates and starts a copy of container id as c describes
// and returns the copy's id. A container already named c.Name (left by a
// killed run) is removed first.
func (c *Client) CloneContainer(ctx context.Context, id string, cl Clone) (string, error) {
	api := c.on(id)
	r, err := api.ContainerInspect(ctx, id)
	if err != nil {
		return "", fmt.Errorf("inspect container %s: %w", short(id), err)
	}
	if r.Config == nil || r.HostConfig == nil {
		return "", fmt.Errorf("container %s: the engine gave no configuration to copy", short(id))
	}
	cfg := *r.Config
	cfg.Image = r.Image
	if cl.Image != "" {
		cfg.Image = cl.Image
	}
	cfg.Hostname = ""
	cfg.Labels = maps.Clone(r.Config.Labels)
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	maps.Copy(cfg.Labels, cl.Labels)
	if cl.NoProbe {
		cfg.Healthcheck = &container.HealthConfig{Test: []string{"NONE"}}
	}
	hc := *r.HostConfig
	hc.Binds, hc.Mounts, hc.AutoRemove = nil, nil, false
	hc.RestartPolicy = container.RestartPolicy{Name: container.RestartPolicyDisabled}
	hc.PortBindings = nil
	replaced := map[string]bool{}
	for _, m := range r.Mounts {
		nm := mount.Mount{Type: m.Type, Source: m.Source, Target: m.Destination, ReadOnly: !m.RW}
		if m.Type == mount.TypeVolume {
			nm.Source = m.Name
		}
		if src, ok := cl.Mounts[m.Destination]; ok {
			nm.Type, nm.Source = mount.TypeBind, src
			replaced[m.Destination] = true
		}
		hc.Mounts = append(hc.Mounts, nm)
	}
	for dst := range cl.Mounts {
		if !replaced[dst] {
			return "", fmt.Errorf("container %s mounts nothing at %s to replace", short(id), dst)
		}
	}
	if err := api.ContainerRemove(ctx, cl.Name, container.RemoveOptions{Force: true}); err != nil && !IsNotFound(err) {
		return "", fmt.Errorf("remove the old %s: %w", cl.Name, err)
	}
	made, err := api.ContainerCreate(ctx, &cfg, &hc, nil, nil, cl.Name)
	if err != nil {
		return "", fmt.Errorf("create %s from %s: %w", cl.Name, short(id), err)
	}
	if err := api.ContainerStart(ctx, made.ID, container.StartOptions{}); err != nil {
		_ = api.ContainerRemove(ctx, made.ID, container.RemoveOptions{Force: true})
		return "", fmt.Errorf("start %s: %w", cl.Name, err)
	}
	return made.ID, nil
}

// Remove removes a container, running or not; gone already is no error.
func (c *Client) Remove(ctx context.Context, id string) error {
	if err := c.on(id).ContainerRemove(ctx, id, container.RemoveOptions{Force: true}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("remove container %s: %w", short(id), err)
	}
	return nil
}
