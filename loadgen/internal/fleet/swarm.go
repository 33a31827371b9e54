package fleet

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"proxybench/internal/dockerx"
)

// SwarmAPI is what the Swarm launcher asks of a Swarm manager;
// *dockerx.Client is one.
type SwarmAPI interface {
	CreateService(ctx context.Context, s dockerx.ServiceSpec) (string, error)
	RemoveService(ctx context.Context, id string) error
	ServicesWithLabel(ctx context.Context, label string) ([]string, error)
	ServiceTask(ctx context.Context, id string) (dockerx.Task, error)
	ServiceLogs(ctx context.Context, id string, follow bool) (io.ReadCloser, error)
	NodeAddr(ctx context.Context, id string) string
	NodeName(ctx context.Context, id string) string
}

// LabelWorker is the label of a worker's Swarm service: the worker's
// index.
const LabelWorker = "proxybench.loadgen-worker"

// Swarm starts each worker as a Docker Swarm service of one task on a node
// the Constraints pick (the load nodes): `loadgen worker -index I -listen
// 0.0.0.0:0` in the node's own network, the loadgen binary bind-mounted
// from Binary into Image, never restarted. Its Hello comes from the
// service's log, its address is its node's, and it is gone when its task
// ends (a killed worker's task fails). Stop removes the service. A
// coordinator that dies leaves its workers' services behind; the next
// Launch of the same index removes them (so does scripts/swarm.sh down).
type Swarm struct {
	API         SwarmAPI
	Image       string   // on every load node, with nothing the worker needs but a kernel: the lab's exporter image
	Binary      string   // this host's path of the loadgen binary, the same path on every load node (default: this executable)
	Constraints []string // e.g. node.labels.proxybench.role.load==true
	Log         *slog.Logger
	// Poll is how often a worker's task state is read (default 250 ms).
	Poll time.Duration
}

// swarmStart bounds how long a worker's task may take to run and say where
// it listens: scheduling, the container's start and the Hello.
const swarmStart = 60 * time.Second

// swarmExitLag bounds how long a dead worker's task takes to be seen
// ended: the node's agent reports it to the manager, and Poll reads it.
const swarmExitLag = 5 * time.Second

// workerBinary is where the loadgen binary is mounted in a worker's task.
const workerBinary = "/proxybench-loadgen"

// serviceName is worker index's service.
func serviceName(index int) string { return "proxybench-loadgen-worker-" + strconv.Itoa(index) }

// Launch implements Launcher.
func (s Swarm) Launch(ctx context.Context, index int) (*Handle, error) {
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bin, err := workerBinaryOr(s.Binary)
	if err != nil {
		return nil, err
	}
	if s.Image == "" {
		return nil, errors.New("loadgen worker on Swarm: no image to run it in (the stack's exporter image: is the stack up?)")
	}
	poll := s.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	// An earlier coordinator's worker of this index, left running.
	if ids, err := s.API.ServicesWithLabel(ctx, LabelWorker+"="+strconv.Itoa(index)); err == nil {
		for _, id := range ids {
			log.Warn("removing a loadgen worker service left by an earlier run", "service", id, "index", index)
			_ = s.API.RemoveService(ctx, id)
		}
	}
	id, err := s.API.CreateService(ctx, dockerx.ServiceSpec{
		Name:        serviceName(index),
		Image:       s.Image,
		Command:     []string{workerBinary, Command, "-index", strconv.Itoa(index), "-listen", "0.0.0.0:0"},
		Labels:      map[string]string{LabelWorker: strconv.Itoa(index)},
		Constraints: s.Constraints,
		Binds:       map[string]string{bin: workerBinary},
	})
	if err != nil {
		return nil, fmt.Errorf("loadgen worker %d: %w", index, err)
	}
	remove := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := s.API.RemoveService(rctx, id); err != nil {
			log.Warn("loadgen worker service not removed", "index", index, "err", err)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, swarmStart)
	defer cancel()
	hello, task, err := s.hello(sctx, id, index, poll)
	if err != nil {
		remove()
		return nil, fmt.Errorf("loadgen worker %d on Swarm %w", index, err)
	}
	addr, err := onNode(hello.Addr, s.API.NodeAddr(ctx, task.NodeID))
	if err != nil {
		remove()
		return nil, fmt.Errorf("loadgen worker %d on Swarm: %w", index, err)
	}
	hello.Addr = addr
	if hello.Host == "" {
		hello.Host = s.API.NodeName(ctx, task.NodeID)
	}
	log.Info("loadgen worker on Swarm", "index", index, "service", id, "node", s.API.NodeName(ctx, task.NodeID), "addr", hello.Addr)
	h := &Handle{Hello: *hello}
	exited := make(chan struct{})
	stop := make(chan struct{})
	var once sync.Once
	var exit string
	var mu sync.Mutex
	go func() {
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			tk, err := s.API.ServiceTask(context.Background(), id)
			if err != nil && !dockerx.IsNotFound(err) {
				continue // the manager did not answer this time
			}
			if err != nil || tk.Done || tk.State == "" {
				mu.Lock()
				exit = "task " + cmp.Or(tk.State, "removed")
				if tk.Err != "" {
					exit += ": " + tk.Err
				}
				mu.Unlock()
				close(exited)
				return
			}
		}
	}()
	h.Exited = exited
	h.ExitLag = swarmExitLag
	h.Exit = func() string { mu.Lock(); defer mu.Unlock(); return exit }
	h.Stop = func() { once.Do(func() { close(stop); remove() }) }
	return h, nil
}

// hello waits for the worker's task to run and its Hello line in the
// service's log.
func (s Swarm) hello(ctx context.Context, id string, index int, poll time.Duration) (*Hello, dockerx.Task, error) {
	var task dockerx.Task
	for {
		t, err := s.API.ServiceTask(ctx, id)
		if err == nil {
			task = t
			if t.Done {
				return nil, t, fmt.Errorf("task %s before it started: %s", t.State, t.Err)
			}
			if t.State == "running" {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil, task, fmt.Errorf("not running after %v (task %q %s): are the load nodes' images and the binary's path there?", swarmStart, task.State, task.Err)
		case <-time.After(poll):
		}
	}
	rc, err := s.API.ServiceLogs(ctx, id, true)
	if err != nil {
		return nil, task, err
	}
	defer rc.Close()
	pr, pw := io.Pipe()
	go func() {
		err := dockerx.Demux(rc, func(st dockerx.Stream, p []byte) {
			if st == dockerx.Stdout {
				pw.Write(p) //nolint:errcheck // the reader stops at the Hello
			}
		})
		pw.CloseWithError(err)
	}()
	defer pr.Close()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "{") {
				lines <- l
				return
			}
		}
		close(lines)
	}()
	select {
	case <-ctx.Done():
		return nil, task, fmt.Errorf("said nothing within %v", swarmStart)
	case l, ok := <-lines:
		if !ok {
			return nil, task, errors.New("ended its log without a Hello")
		}
		var h Hello
		if err := json.Unmarshal([]byte(l), &h); err != nil || h.Index != index {
			return nil, task, fmt.Errorf("said %q, not its Hello as worker %d", l, index)
		}
		return &h, task, nil
	}
}

// onNode is addr (host:port, where the worker listens) at the node's
// address: a worker listening on every address of its node is reached at
// the node's.
func onNode(addr, node string) (string, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("its address %q: %w", addr, err)
	}
	if node == "" {
		return "", fmt.Errorf("the manager does not say the address of the node it runs on")
	}
	return net.JoinHostPort(node, port), nil
}
