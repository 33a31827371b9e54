package study

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// StudyLabel marks every container a study starts, so that a crashed study's
// leftovers are found and removed (RemoveLeftovers).
const StudyLabel = "proxybench.study"

// Container is a container a study starts with `docker run -d`.
type Container struct {
	Name    string
	Image   string
	Network string   // "host" or "bridge"
	Publish []string // bridge: docker run -p values, always on 127.0.0.1
	CPUs    float64  // docker --cpus (0 = no quota)
	Cpuset  string   // docker --cpuset-cpus ("" = any CPU)
	Mounts  []string // docker -v values
	Env     []string // docker -e values
	Cmd     []string // the command after the image
}

// docker runs the docker CLI and returns its trimmed stdout.
func docker(ctx context.Context, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// Start removes any container of the same name and starts c; the returned
// stop removes it (with a fresh context, so it works after a Ctrl-C).
func (e *Env) Start(ctx context.Context, c Container) (stop func(), err error) {
	_, _ = docker(ctx, "rm", "-f", c.Name)
	args := []string{"run", "-d", "--name", c.Name, "--label", StudyLabel + "=" + e.rec.Run, "--network", c.Network}
	for _, p := range c.Publish {
		args = append(args, "-p", p)
	}
	if c.CPUs > 0 {
		args = append(args, "--cpus", fmt.Sprintf("%g", c.CPUs))
	}
	if c.Cpuset != "" {
		args = append(args, "--cpuset-cpus", c.Cpuset)
	}
	for _, m := range c.Mounts {
		args = append(args, "-v", m)
	}
	for _, v := range c.Env {
		args = append(args, "-e", v)
	}
	args = append(append(args, c.Image), c.Cmd...)
	if _, err := docker(ctx, args...); err != nil {
		return nil, err
	}
	e.Log.Info("study container started", "name", c.Name, "image", c.Image, "network", c.Network, "cpus", c.CPUs, "cpuset", c.Cpuset)
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := docker(sctx, "rm", "-f", c.Name); err != nil {
			e.Log.Warn("study container not removed", "name", c.Name, "err", err)
		}
	}, nil
}

// RemoveLeftovers removes the containers earlier studies left behind (a
// killed study cannot remove its own).
func RemoveLeftovers(ctx context.Context) error {
	ids, err := docker(ctx, "ps", "-aq", "--filter", "label="+StudyLabel)
	if err != nil || ids == "" {
		return err
	}
	_, err = docker(ctx, append([]string{"rm", "-f"}, strings.Fields(ids)...)...)
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

// composeImage is the image compose/images.env names under key (written by
// scripts/images.sh), or def when the file or the key is missing.
func composeImage(repo, key, def string) string {
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
