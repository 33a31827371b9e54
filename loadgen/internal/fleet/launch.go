package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
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
// -exit-with-stdin`, listening on 127.0.0.1, which inherit this process's
// CPU affinity (the loadgen's CPUs of the placement) and environment plus
// Env. A worker ends when Stop closes its stdin, or when this process is
// gone.
type Local struct {
	Binary string   // default: this executable
	Env    []string // added to the environment (the tests' helper-process switch)
	Log    *slog.Logger
}

// startTimeout bounds how long a worker may take to say where it listens.
const startTimeout = 10 * time.Second

// Launch implements Launcher.
func (l Local) Launch(ctx context.Context, index int) (*Handle, error) {
	bin := l.Binary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("the loadgen executable, to start workers: %w", err)
		}
		bin = exe
	}
	log := l.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cmd := exec.Command(bin, Command, "-index", strconv.Itoa(index), "-exit-with-stdin")
	cmd.Env = append(os.Environ(), l.Env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start loadgen worker %d: %w", index, err)
	}
	var (
		tail   lastLines
		exited = make(chan struct{})
		how    string
	)
	go func() {
		// The worker's log goes to ours; its last lines say why it ended.
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			tail.add(sc.Text())
			log.Info("loadgen worker: " + sc.Text())
		}
	}()
	go func() {
		err := cmd.Wait()
		how = "exited"
		if err != nil {
			how = err.Error()
		}
		close(exited)
	}()
	h := &Handle{Exited: exited, Exit: func() string { return how }}
	h.Stop = func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(2 * time.Second):
			cmd.Process.Kill() //nolint:errcheck // best effort: our own child
			<-exited
		}
	}
	hello := make(chan Hello, 1)
	go func() {
		var m Hello
		if err := json.NewDecoder(stdout).Decode(&m); err == nil {
			hello <- m
		}
		io.Copy(io.Discard, stdout) //nolint:errcheck // drain
	}()
	select {
	case m := <-hello:
		if m.Index != index {
			h.Stop()
			return nil, fmt.Errorf("loadgen worker %d says it is worker %d", index, m.Index)
		}
		h.Hello = m
		return h, nil
	case <-exited:
		return nil, fmt.Errorf("loadgen worker %d ended before it listened (%s): %s", index, how, tail.String())
	case <-time.After(startTimeout):
	case <-ctx.Done():
	}
	h.Stop()
	return nil, fmt.Errorf("loadgen worker %d did not say where it listens within %s: %s", index, startTimeout, tail.String())
}

// lastLines keeps a process's last few lines of log.
type lastLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *lastLines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
	if len(l.lines) > 5 {
		l.lines = l.lines[1:]
	}
}

func (l *lastLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "; ")
}
