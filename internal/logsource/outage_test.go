package logsource

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"proxybench/internal/dockerx"
)

// socketProxy forwards a unix socket to the real engine's, and can be cut
// and restored: to the exporter that is the engine going away and coming
// back, without restarting the engine every other test on the host
// shares.
type socketProxy struct {
	path, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func (p *socketProxy) up(t *testing.T) {
	t.Helper()
	os.Remove(p.path)
	ln, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("unix", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
}

func (p *socketProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestDockerSurvivesEngineOutage follows a real Go program in a real
// container through an engine that disappears for 3 s, during which the
// container is restarted, and checks no gc line is lost or counted twice.
func TestDockerSurvivesEngineOutage(t *testing.T) {
	const real = "/var/run/docker.sock"
	if _, err := os.Stat(real); err != nil || os.Getenv("DOCKER_HOST") != "" {
		t.Skip("needs the local engine at " + real)
	}
	img := debianImage(t)
	prog := buildGCProg(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	project := fmt.Sprintf("proxybench-outage-test-%d", os.Getpid())
	name := project + "-gc"
	out, err := exec.Command("docker", "run", "-d", "--name", name, "--network", "none",
		"--label", dockerx.LabelProject+"="+project, "--label", dockerx.LabelGCTrace+"=true",
		"-e", "GODEBUG=gctrace=1", "-v", prog+":/gcprog:ro", img, "/gcprog").CombinedOutput()
	if err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })

	px := &socketProxy{path: filepath.Join(t.TempDir(), "docker.sock"), target: real}
	px.up(t)
	t.Setenv("DOCKER_HOST", "unix://"+px.path)
	cli, err := dockerx.New(ctx)
	os.Unsetenv("DOCKER_HOST") // the docker CLI below talks to the real socket
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	rec := &recorder{}
	src := projectSource(cli, project, rec)
	src.MaxBackoff = 500 * time.Millisecond
	stop := following(ctx, src)

	time.Sleep(1500 * time.Millisecond)
	if got, _, _ := rec.snapshot(); len(got) == 0 {
		t.Fatal("nothing followed before the outage")
	}
	px.down()
	// Through the real socket, behind the exporter's back.
	if b, err := exec.Command("docker", "restart", "-t", "0", name).CombinedOutput(); err != nil {
		t.Fatalf("docker restart: %v %s", err, b)
	}
	time.Sleep(3 * time.Second)
	px.up(t)
	time.Sleep(1500 * time.Millisecond)
	if b, err := exec.Command("docker", "stop", "-t", "0", name).CombinedOutput(); err != nil {
		t.Fatalf("docker stop: %v %s", err, b)
	}

	want, runs := dockerGCLines(t, name)
	var got []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got, _, _ = rec.snapshot(); len(got) >= len(want) {
			break
		}
	}
	time.Sleep(500 * time.Millisecond)
	got, _, _ = rec.snapshot()
	t.Logf("%d gc lines over %d runs in docker logs", len(want), runs)
	if n := rec.resetCount(); n != 1 {
		t.Errorf("sink told of %d restarts, want 1", n)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("sink saw %d events, docker logs hold %d; %s", len(got), len(want), firstDiff(got, want))
	}
	if err := stop(); err != nil {
		t.Error(err)
	}
}
