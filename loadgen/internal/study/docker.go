package study

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"proxybench/internal/dockerx"
)

// StudyLabel marks every container a study starts, so that a crashed study's
// leftovers are found and removed (RemoveLeftovers).
const StudyLabel = "proxybench.study"

// Container is a container a study starts (as `docker run -d` would).
type Container struct {
	Name    string
	Image   string
	Network string   // "host" or "bridge"
	Publish []string // bridge: `docker run -p` values, always on 127.0.0.1
	CPUs    float64  // docker --cpus (0 = no quota)
	Cpuset  string   // docker --cpuset-cpus ("" = any CPU)
	Mounts  []string // `docker run -v` values
	Env     []string // docker -e values
	Cmd     []string // the command after the image
}

// Engine is the Docker engine the studies start their containers on
// (internal/dockerx, the one client), connected once.
var Engine = sync.OnceValues(func() (*dockerx.Client, error) { return dockerx.New(context.Background()) })

// Start removes any container of the same name and starts c; the returned
// stop removes it (with a fresh context, so it works after a Ctrl-C).
func (e *Env) Start(ctx context.Context, c Container) (stop func(), err error) {
	dc, err := Engine()
	if err != nil {
		return nil, err
	}
	id, err := dc.Run(ctx, dockerx.RunSpec{Name: c.Name, Image: c.Image, Labels: map[string]string{StudyLabel: e.rec.Run},
		Network: c.Network, Publish: c.Publish, CPUs: c.CPUs, Cpuset: c.Cpuset, Binds: c.Mounts, Env: c.Env, Cmd: c.Cmd})
	if err != nil {
		return nil, err
	}
	e.Log.Info("study container started", "name", c.Name, "id", id[:min(12, len(id))], "image", c.Image, "network", c.Network, "cpus", c.CPUs, "cpuset", c.Cpuset)
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dc.Remove(sctx, c.Name); err != nil {
			e.Log.Warn("study container not removed", "name", c.Name, "err", err)
		}
	}, nil
}

// RemoveLeftovers removes the containers earlier studies left behind (a
// killed study cannot remove its own).
func RemoveLeftovers(ctx context.Context) error {
	dc, err := Engine()
	if err != nil {
		return err
	}
	_, err = dc.RemoveWithLabel(ctx, StudyLabel)
	return err
}

// WaitHTTP waits until url answers 200, up to timeout.
func WaitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer 200 within %v: %v", url, timeout, last)
}

// ComposeImage is the image compose/images.env names under key (written by
// scripts/images.sh), or def when the file or the key is missing.
func ComposeImage(repo, key, def string) string {
	b, err := os.ReadFile(filepath.Join(repo, "compose", "images.env"))
	if err != nil {
		return def
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if ok && k == key && v != "" {
			return v
		}
	}
	return def
}
