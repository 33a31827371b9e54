package dockerx

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"

	"proxybench/internal/cgroup"
)

// testImage picks the newest local proxybench/debian image; tests never pull.
func testImage(t *testing.T, c *Client) string {
	t.Helper()
	imgs, err := c.api.ImageList(context.Background(), image.ListOptions{})
	if err != nil {
		t.Fatalf("list images: %v", err)
	}
	var best string
	var created int64
	for _, im := range imgs {
		for _, tag := range im.RepoTags {
			if strings.HasPrefix(tag, "proxybench/debian:") && im.Created >= created {
				best, created = tag, im.Created
			}
		}
	}
	if best == "" {
		t.Skip("no local proxybench/debian image (built by scripts/; never pulled)")
	}
	return best
}

func newClient(t *testing.T) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := New(ctx)
	if err != nil {
		t.Skipf("no docker engine: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestLifecycle runs a throwaway container on the real engine and drives it
// through every call of the package.
func TestLifecycle(t *testing.T) {
	c := newClient(t)
	img := testImage(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	project := fmt.Sprintf("proxybench-dockerx-test-%d", os.Getpid())
	created, err := c.api.ContainerCreate(ctx, &container.Config{
		Image: img,
		Cmd:   []string{"sh", "-c", "i=0; while :; do echo out $i; echo err $i >&2; i=$((i+1)); sleep 0.1; done"},
		Labels: map[string]string{
			LabelProject:    project,
			LabelService:    "ticker",
			LabelVersionCmd: "cat /etc/debian_version",
		},
	}, &container.HostConfig{NetworkMode: "none", Resources: container.Resources{CpusetCpus: "0", NanoCPUs: 5e8}}, nil, nil, project+"-ticker")
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	id := created.ID
	t.Cleanup(func() {
		_ = c.api.ContainerRemove(context.Background(), id, container.RemoveOptions{Force: true})
	})

	// Created but never started: listed (All), not running, no start time.
	ctrs, err := c.Containers(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	if len(ctrs) != 1 || ctrs[0].ID != id || ctrs[0].Running || !ctrs[0].StartedAt.IsZero() || ctrs[0].Pid != 0 {
		t.Fatalf("before start: got %+v, want one stopped container %s", ctrs, id[:12])
	}
	if ctrs[0].Service != "ticker" || ctrs[0].Name != project+"-ticker" || ctrs[0].Image != img || !strings.HasPrefix(ctrs[0].ImageID, "sha256:") ||
		ctrs[0].Cpuset != "0" || ctrs[0].CPUs != 0.5 {
		t.Errorf("fields: %+v", ctrs[0])
	}

	if err := c.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	first, err := c.Service(ctx, project, "ticker")
	if err != nil {
		t.Fatal(err)
	}
	if !first.Running || first.State != "running" || first.StartedAt.IsZero() {
		t.Fatalf("after start: %+v", first)
	}
	// The main PID is the host's view of the container's process: its
	// cgroup is the container's, with the CPU the shell loop has used.
	if first.Pid <= 0 {
		t.Fatalf("running container has Pid %d", first.Pid)
	}
	if g, err := cgroup.Of(first.Pid); err != nil {
		t.Errorf("cgroup of the container's main process %d: %v", first.Pid, err)
	} else if !strings.Contains(g.Path, id) {
		t.Errorf("cgroup of pid %d is %s, want one naming the container %s", first.Pid, g.Path, id[:12])
	}

	v, err := c.Version(ctx, first)
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	if !strings.HasPrefix(v, "12.") {
		t.Errorf("version = %q, want a bookworm 12.x", v)
	}

	st, err := c.Stats(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.CPUTotal <= 0 || st.MemUsage == 0 || st.Read.IsZero() {
		t.Errorf("stats of a running shell loop: %+v", st)
	}

	if err := c.Pause(ctx, id); err != nil {
		t.Fatal(err)
	}
	if p, _ := c.Inspect(ctx, id); p.State != "paused" || !p.Running {
		t.Errorf("after pause: state %q running %v, want paused and running", p.State, p.Running)
	}
	if err := c.Unpause(ctx, id); err != nil {
		t.Fatal(err)
	}

	time.Sleep(300 * time.Millisecond)
	if err := c.Stop(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	stopped, err := c.Inspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if stopped.Running || stopped.State != "exited" || stopped.Pid != 0 {
		t.Fatalf("after stop: %+v", stopped)
	}
	// Stopped with no grace: killed (SIGKILL, 128 + 9), not by the OOM killer.
	if got := stopped.ExitInfo(); got != "code 137" {
		t.Errorf("exit info after a kill %q, want code 137", got)
	}
	if got := first.ExitInfo(); got != "" {
		t.Errorf("exit info while running %q", got)
	}

	// Logs from the start of the first run: both streams, demultiplexed,
	// each line with a timestamp not before the start.
	rc, err := c.Logs(ctx, id, first.StartedAt, false)
	if err != nil {
		t.Fatal(err)
	}
	var outs, errs int
	err = Demux(rc, func(s Stream, p []byte) {
		sc := bufio.NewScanner(bytes.NewReader(p))
		for sc.Scan() {
			ts, msg, _ := strings.Cut(sc.Text(), " ")
			tt, perr := time.Parse(time.RFC3339Nano, ts)
			if perr != nil || tt.Before(first.StartedAt) {
				t.Errorf("line %q: timestamp %v before start %v (%v)", sc.Text(), tt, first.StartedAt, perr)
			}
			switch {
			case s == Stdout && strings.HasPrefix(msg, "out "):
				outs++
			case s == Stderr && strings.HasPrefix(msg, "err "):
				errs++
			default:
				t.Errorf("stream %d carried %q", s, msg)
			}
		}
	})
	rc.Close()
	if outs == 0 || errs == 0 {
		t.Errorf("logs: %d stdout and %d stderr lines, want both > 0 (demux err %v)", outs, errs, err)
	}

	// A restart is a new process: a later StartedAt under the same ID.
	if err := c.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	second, err := c.Inspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !second.StartedAt.After(first.StartedAt) {
		t.Errorf("restart: StartedAt %v not after %v", second.StartedAt, first.StartedAt)
	}

	if _, err := c.Service(ctx, project, "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("missing service: err = %v", err)
	}
	if _, err := c.Inspect(ctx, "proxybench-no-such-container"); !IsNotFound(err) {
		t.Errorf("inspect missing: err = %v, want not found", err)
	}
}

func TestParseVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ service, out, want string }{
		{"nginx", "nginx version: nginx/1.22.1\n", "nginx/1.22.1"},
		{"haproxy", "HAProxy version 2.6.12-1+deb12u1 2023/12/16 - https://haproxy.org/\nStatus: long-term supported branch\n", "HAProxy 2.6.12-1+deb12u1"},
		{"traefik", "Version:      3.6.12\nCodename:     ramequin\nGo version:   go1.26.8\n", "traefik 3.6.12"},
		{"caddy", "v2.11.9 h1:abc=\n", "caddy v2.11.9"},
		{"", "\n12.13\n", "12.13"},
	} {
		got, err := ParseVersion(tc.service, tc.out)
		if err != nil || got != tc.want {
			t.Errorf("ParseVersion(%q, %q) = %q, %v; want %q", tc.service, tc.out, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ service, out, hint string }{
		{"nginx", "sh: nginx: not found", "unrecognised"},
		{"caddy", "unknown\n", "CustomVersion"},
		{"traefik", "Version:      dev\nCodename:     cheddar\n", "pkg/version.Version"},
	} {
		if _, err := ParseVersion(tc.service, tc.out); err == nil || !strings.Contains(err.Error(), tc.hint) {
			t.Errorf("ParseVersion(%q, %q) err = %v, want a hint %q", tc.service, tc.out, err, tc.hint)
		}
	}
}

func TestWithoutGCTrace(t *testing.T) {
	t.Parallel()
	in := "gc 1 @0.060s 0%: 0.62+5.1+0.007 ms clock, 1.2+0.50/0.33/0.38+0.014 ms cpu, 3->4->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P\nnginx version: nginx/1.22.1\nGC forced\nscav 0 KiB\n"
	if got := parseVersionOf(t, "nginx", withoutGCTrace(in)); got != "nginx/1.22.1" {
		t.Errorf("got %q", got)
	}
	if got := firstLine(withoutGCTrace(in)); got != "nginx version: nginx/1.22.1" {
		t.Errorf("first line after filtering = %q", got)
	}
}

func parseVersionOf(t *testing.T, service, out string) string {
	t.Helper()
	v, err := ParseVersion(service, out)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDemuxRejectsTTYStream(t *testing.T) {
	t.Parallel()
	err := Demux(strings.NewReader("hello world, not framed"), func(Stream, []byte) {})
	if err == nil || !strings.Contains(err.Error(), "TTY") {
		t.Errorf("err = %v, want a hint about TTY", err)
	}
}

func TestCurrentTask(t *testing.T) {
	t.Parallel()
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	task := map[string]string{LabelSwarmTask: "t"}
	old := Container{ID: "old", State: "exited", Labels: task, StartedAt: at(1)}
	failed := Container{ID: "failed", State: "exited", Labels: task, StartedAt: at(3)}
	live := Container{ID: "live", State: "running", Running: true, Labels: task, StartedAt: at(2)}
	ids := func(cs []Container) (s []string) {
		for _, c := range cs {
			s = append(s, c.ID)
		}
		return s
	}
	for _, tc := range []struct {
		in   []Container
		want string
	}{
		{[]Container{old, live, failed}, "live"},             // the task history goes
		{[]Container{old, failed}, "failed"},                 // none live: the latest, dead
		{[]Container{live, {ID: "compose"}}, "live compose"}, // not all tasks: as they are
		{[]Container{old}, "old"},
	} {
		if got := strings.Join(ids(currentTask(tc.in)), " "); got != tc.want {
			t.Errorf("currentTask(%v) = %s, want %s", ids(tc.in), got, tc.want)
		}
	}
}

// A container's pid names a process here only when its engine is reached
// through a unix socket (New's own engine, or another node's on this
// machine); an engine over the network is another machine's.
func TestOnThisMachine(t *testing.T) {
	t.Parallel()
	c := &Client{owner: map[string]*engine{
		"a": {addr: "unix:///run/proxybench-swarm-2/sock/docker.sock"},
		"b": {addr: "tcp://10.0.0.5:2376"},
		"c": {addr: "ssh://lab@10.0.0.6"},
	}}
	for id, want := range map[string]bool{"a": true, "b": false, "c": false, "not-listed": true} {
		if got := c.onThisMachine(id); got != want {
			t.Errorf("onThisMachine(%s) = %v, want %v", id, got, want)
		}
	}
}
