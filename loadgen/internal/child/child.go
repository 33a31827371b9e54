// Package child owns the loadgen's helper processes (the trivial server of
// the instrument's ceiling, the loadgen workers): each is started with a
// pipe on its stdin, which it exits on when it closes, so none outlives the
// loadgen; its first line of stdout says where it listens; the last lines
// of its stderr are kept for the error that names it, and each may be
// passed on as it comes.
package child

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// stopWait is how long Stop waits for the process to exit once its stdin
// is closed before it kills it.
const stopWait = 2 * time.Second

// Proc is a started helper process.
type Proc struct {
	Pid    int
	Exited <-chan struct{} // closed once it has exited

	stdin io.Closer
	cmd   *exec.Cmd
	exit  string
	mu    sync.Mutex
	tail  []string
}

// Start starts cmd (its Stdin, Stdout and Stderr left unset) and waits up
// to timeout for its first line of stdout, returned trimmed. Each line of
// its stderr goes to onStderr (nil: none) and the last few are kept. It
// fails when the process cannot start, ends before that line, or stays
// silent past timeout or ctx (then it is stopped); the error says how and
// ends with its last lines of stderr.
func Start(ctx context.Context, cmd *exec.Cmd, timeout time.Duration, onStderr func(string)) (*Proc, string, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	exited := make(chan struct{})
	p := &Proc{Pid: cmd.Process.Pid, Exited: exited, stdin: stdin, cmd: cmd}
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.keep(sc.Text())
			if onStderr != nil {
				onStderr(sc.Text())
			}
		}
	}()
	line := make(chan string, 1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		l, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil {
			line <- strings.TrimSpace(l)
		}
		io.Copy(io.Discard, stdout) //nolint:errcheck // drain
	}()
	go func() {
		<-logged // Wait closes the pipes: read them to the end first
		<-drained
		err := cmd.Wait()
		p.exit = "exited"
		if err != nil {
			p.exit = err.Error()
		}
		close(exited)
	}()
	select {
	case l := <-line:
		return p, l, nil
	case <-exited:
		return nil, "", fmt.Errorf("ended before it said where it listens (%s)%s", p.exit, p.lastLines())
	case <-time.After(timeout):
		err = fmt.Errorf("did not say where it listens within %s", timeout)
	case <-ctx.Done():
		err = fmt.Errorf("did not say where it listens: %w", ctx.Err())
	}
	p.Stop()
	return nil, "", errors.New(err.Error() + p.lastLines())
}

func (p *Proc) keep(l string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tail = append(p.tail, l)
	if len(p.tail) > 5 {
		p.tail = p.tail[1:]
	}
}

// lastLines is ": " and its last lines of stderr, "" when it wrote none.
func (p *Proc) lastLines() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.tail) == 0 {
		return ""
	}
	return ": " + strings.Join(p.tail, "; ")
}

// Exit is how it ended ("exited", "signal: killed", "exit status 1"); ""
// while it runs. Read it once Exited is closed.
func (p *Proc) Exit() string {
	select {
	case <-p.Exited:
		return p.exit
	default:
		return ""
	}
}

// Stop closes its stdin, which ends it, and waits for it; it kills it when
// it has not exited within 2 s.
func (p *Proc) Stop() {
	p.stdin.Close()
	select {
	case <-p.Exited:
	case <-time.After(stopWait):
		p.cmd.Process.Kill() //nolint:errcheck // best effort: our own child
		<-p.Exited
	}
}
