package dockerx

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/container"
)

// Stats is one reading of a container's resource use as `docker stats`
// computes it.
type Stats struct {
	Read     time.Time     // when the engine read the cgroup
	CPUTotal time.Duration // cumulative CPU time of the container
	// MemUsage is what `docker stats` shows as MEM USAGE: usage minus
	// inactive file cache (the same as cAdvisor's working set).
	MemUsage uint64
	MemLimit uint64
}

// Stats reads the container's stats once, without the engine's 1 s
// priming wait.
func (c *Client) Stats(ctx context.Context, id string) (Stats, error) {
	r, err := c.on(id).ContainerStatsOneShot(ctx, id)
	if err != nil {
		return Stats{}, fmt.Errorf("stats of container %s: %w", short(id), err)
	}
	defer r.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
		return Stats{}, fmt.Errorf("stats of container %s: decode: %w", short(id), err)
	}
	mem := s.MemoryStats.Usage
	// cgroup v1 reports total_inactive_file, v2 inactive_file (docker CLI
	// does the same subtraction).
	inactive, ok := s.MemoryStats.Stats["total_inactive_file"]
	if !ok {
		inactive = s.MemoryStats.Stats["inactive_file"]
	}
	if inactive < mem {
		mem -= inactive
	}
	return Stats{Read: s.Read, CPUTotal: time.Duration(s.CPUStats.CPUUsage.TotalUsage), MemUsage: mem, MemLimit: s.MemoryStats.Limit}, nil
}
