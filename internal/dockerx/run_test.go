package dockerx

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRunSpec starts containers on the real engine as the studies do: a
// one-shot run with its output and exit code, a server on the bridge
// with a port published on 127.0.0.1, its log's tail, and removal by
// label.
func TestRunSpec(t *testing.T) {
	c := newClient(t)
	img := testImage(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	label := fmt.Sprintf("proxybench.dockerx-test-%d", os.Getpid())
	t.Cleanup(func() { _, _ = c.RemoveWithLabel(context.Background(), label) })
	spec := func(name string, cmd ...string) RunSpec {
		return RunSpec{Name: fmt.Sprintf("%s-%s", strings.ReplaceAll(label, ".", "-"), name), Image: img, Labels: map[string]string{label: "1"},
			Network: "none", Cmd: cmd}
	}

	if out, err := c.RunOnce(ctx, spec("once", "sh", "-c", "echo hello; echo oops >&2")); err != nil || out != "hello" {
		t.Errorf("run once: %q %v, want hello", out, err)
	}
	if _, err := c.RunOnce(ctx, spec("fails", "sh", "-c", "echo oops >&2; exit 3")); err == nil || !strings.Contains(err.Error(), "exit code 3") || !strings.Contains(err.Error(), "oops") {
		t.Errorf("a failing run: %v", err)
	}

	s := spec("server", "sh", "-c", "echo started; while :; do sleep 1; done")
	s.Network, s.Publish, s.CPUs, s.Cpuset = "bridge", []string{"127.0.0.1::8080"}, 0.5, "0"
	id, err := c.Run(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	ctr, err := c.Inspect(ctx, s.Name)
	if err != nil || ctr.ID != id || !ctr.Running || ctr.CPUs != 0.5 || ctr.Cpuset != "0" || ctr.Labels[label] != "1" {
		t.Fatalf("inspect %+v %v", ctr, err)
	}
	if p, err := c.HostPort(ctx, id, 8080); err != nil || p <= 0 {
		t.Errorf("host port %d %v", p, err)
	}
	if _, err := c.HostPort(ctx, id, 9999); err == nil {
		t.Error("a port not published has a host port")
	}
	deadline := time.Now().Add(10 * time.Second)
	for tail, _ := c.Tail(ctx, id, 5); tail != "started"; tail, _ = c.Tail(ctx, id, 5) {
		if time.Now().After(deadline) {
			t.Fatalf("tail %q, want started", tail)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Run again under the same name: the old one goes first.
	if id2, err := c.Run(ctx, s); err != nil || id2 == id {
		t.Fatalf("second run %s %v", id2, err)
	}
	if n, err := c.RemoveWithLabel(ctx, label); err != nil || n != 1 {
		t.Errorf("removed %d (%v), want the one server left", n, err)
	}
	if _, err := c.Inspect(ctx, s.Name); !IsNotFound(err) {
		t.Errorf("after removal: %v", err)
	}
	if _, err := c.ImageID(ctx, img); err != nil {
		t.Error(err)
	}
	if _, err := c.ImageID(ctx, "proxybench/no-such-image:none"); err == nil {
		t.Error("a missing image has an id")
	}
}
