package dockerx

import (
	"context"
	"fmt"
	"math"

	"github.com/docker/docker/api/types/container"
)

// NanoCPUs is a container's CPU quota in billionths of a core (docker
// --cpus); 0 when it has none.
func (c *Client) NanoCPUs(ctx context.Context, id string) (int64, error) {
	r, err := c.on(id).ContainerInspect(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("inspect container %s: %w", short(id), err)
	}
	if r.HostConfig == nil {
		return 0, nil
	}
	return r.HostConfig.NanoCPUs, nil
}

// SetNanoCPUs changes a running container's CPU quota in place (docker
// update --cpus); 0 lifts it.
func (c *Client) SetNanoCPUs(ctx context.Context, id string, n int64) error {
	if _, err := c.on(id).ContainerUpdate(ctx, id, container.UpdateConfig{Resources: container.Resources{NanoCPUs: n}}); err != nil {
		return fmt.Errorf("update the CPU quota of container %s to %g cores: %w", short(id), float64(n)/1e9, err)
	}
	return nil
}

// Cores is a quota in cores as NanoCPUs.
func Cores(cores float64) int64 { return int64(math.Round(cores * 1e9)) }
