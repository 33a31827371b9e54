package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"time"

	"proxybench/loadgen/internal/child"
)

// Launcher starts worker index and says how it is reached; where it runs is
// its business (a local process today).
type Launcher interface {
	Launch(ctx context.Context, index int) (*Handle, error)
}

// Handle is a started worker.
type Handle struct {
	Hello
	// Exited is closed when the worker is gone; Exit then says how ("signal:
	// killed", "exit status 1"). Nil for a worker the launcher cannot watch.
	Exited <-chan struct{}
	Exit   func() string
	// ExitLag is how long after a worker's death Exited may still be open
	// (a process is reaped at once; a Swarm task's end reaches the manager
	// later); 0 means a second.
	ExitLag time.Duration
	// Stop ends the worker (and waits for it, briefly).
	Stop func()
}

// Gone says whether the worker is known to be gone, and how it went.
func (h *Handle) Gone() (bool, string) {
	if h.Exited == nil {
		return false, ""
	}
	select {
	case <-h.Exited:
		return true, h.Exit()
	default:
		return false, ""
	}
}

// Local starts workers as processes of this host: `Binary worker -index I
// -listen Listen -exit-with-stdin`, which inherit this process's CPU
// affinity (the loadgen's CPUs of the placement) and environment plus Env.
// A worker ends when Stop closes its stdin, or when this process is gone.
type Local struct {
	Binary string   // default: this executable
	Env    []string // added to the environment (the tests' helper-process switch)
	// Listen is where the workers listen: a host and port 0 (default
	// 127.0.0.1:0), where Prometheus reaches the loadgen's own /metrics.
	Listen string
	Log    *slog.Logger
}

// workerBinaryOr is bin, or this executable when bin is "": the loadgen
// binary a worker runs.
func workerBinaryOr(bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("the loadgen executable, to start workers: %w", err)
	}
	return exe, nil
}

// startTimeout bounds how long a worker may take to say where it listens.
const startTimeout = 10 * time.Second

// Launch implements Launcher.
func (l Local) Launch(ctx context.Context, index int) (*Handle, error) {
	bin, err := workerBinaryOr(l.Binary)
	if err != nil {
		return nil, err
	}
	log := l.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	listen := l.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	cmd := exec.Command(bin, Command, "-index", strconv.Itoa(index), "-listen", listen, "-exit-with-stdin")
	cmd.Env = append(os.Environ(), l.Env...)
	p, line, err := child.Start(ctx, cmd, startTimeout, func(l string) { log.Info("loadgen worker: " + l) })
	if err != nil {
		return nil, fmt.Errorf("loadgen worker %d %w", index, err)
	}
	h := &Handle{Exited: p.Exited, Exit: p.Exit, Stop: p.Stop}
	if err := json.Unmarshal([]byte(line), &h.Hello); err != nil || h.Index != index {
		p.Stop()
		return nil, fmt.Errorf("loadgen worker %d said %q, not its Hello as worker %d", index, line, index)
	}
	return h, nil
}
