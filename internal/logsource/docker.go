package logsource

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"proxybench/internal/dockerx"
)

// Engine is the part of dockerx.Client the Docker source uses.
type Engine interface {
	List(ctx context.Context, labels ...string) ([]dockerx.Container, error)
	Inspect(ctx context.Context, id string) (dockerx.Container, error)
	Logs(ctx context.Context, id string, since time.Time, follow bool) (io.ReadCloser, error)
}

var _ Engine = (*dockerx.Client)(nil)

// Docker follows the logs of every container carrying all of Labels.
type Docker struct {
	Engine Engine
	Labels []string // e.g. com.docker.compose.project=proxybench, proxybench.gctrace=true
	// Open makes the sink of a newly found container; Close is called when
	// the container is gone (removed).
	Open  func(dockerx.Container) Sink
	Close func(dockerx.Container, Sink)
	Log   *slog.Logger
	// Interval between looks for new or removed containers. Restarts are
	// seen by each container's follower at once, not by this poll.
	Interval time.Duration
	// MaxBackoff caps the wait between retries while the engine is away.
	MaxBackoff time.Duration
}

type follower struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Run discovers and follows containers until ctx ends.
func (d *Docker) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	followers := map[string]*follower{}
	defer func() {
		for _, f := range followers {
			f.cancel()
		}
	}()
	bo := backoff{max: d.MaxBackoff}
	for {
		list, err := d.Engine.List(ctx, d.Labels...)
		wait := d.Interval
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			wait = bo.next()
			if bo.n == 1 {
				d.Log.Warn("docker engine unavailable, retrying with backoff", "err", err)
			}
		} else {
			if bo.n > 0 {
				d.Log.Info("docker engine back")
			}
			bo.reset()
			ids := make(map[string]bool, len(list))
			for _, c := range list {
				ids[c.ID] = true
			}
			for id, f := range followers {
				if _, ok := ids[id]; !ok {
					f.cancel()
					<-f.done
					delete(followers, id)
				}
			}
			for id := range ids {
				if _, ok := followers[id]; ok {
					continue
				}
				fctx, cancel := context.WithCancel(ctx)
				f := &follower{cancel: cancel, done: make(chan struct{})}
				followers[id] = f
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer close(f.done)
					d.follow(fctx, id)
				}()
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// stream is where a follower is in a container's log, kept across
// reconnects so nothing is read twice or skipped.
type stream struct {
	sink Sink
	// start names the newest process seen (container StartedAt).
	start time.Time
	// last is the newest timestamp seen on each output (stdout, stderr); a
	// (re)connect reads from the older of the two (the engine includes it).
	last [2]time.Time
	// The log is not in timestamp order: the engine stamps the two outputs
	// in separate goroutines, and at a restart the old process's last lines
	// can be stamped after the new process's first (both seen under load).
	// So lines are told apart by content, not by position: seen holds every
	// message of the last dedupeWindow, and older ones were handled by an
	// earlier read.
	seen     map[string]time.Time
	newest   time.Time
	out, err splitter
	ts       time.Time
}

// dedupeWindow bounds how far out of order the engine's log can be.
const dedupeWindow = 10 * time.Second

// since is where a (re)connect must start so neither output misses a line.
func (st *stream) since() time.Time {
	if st.last[1].Before(st.last[0]) {
		return st.last[1]
	}
	return st.last[0]
}

// follow reads one container's log until ctx ends or it is removed.
func (d *Docker) follow(ctx context.Context, id string) {
	var st *stream
	var ctr dockerx.Container
	bo := backoff{max: d.MaxBackoff}
	defer func() {
		if st != nil {
			d.Close(ctr, st.sink)
		}
	}()
	for ctx.Err() == nil {
		cur, err := d.Engine.Inspect(ctx, id)
		if dockerx.IsNotFound(err) {
			return
		}
		if err != nil {
			sleep(ctx, bo.next())
			continue
		}
		bo.reset()
		if st == nil {
			ctr = cur
			// Since the previous process exited (zero: from the first
			// line): the current process's lines from its very first.
			st = &stream{sink: d.Open(cur), start: cur.StartedAt, seen: map[string]time.Time{}}
			st.last[0], st.last[1] = cur.FinishedAt, cur.FinishedAt
			d.Log.Info("following gctrace", "container", cur.Name, "service", cur.Service, "started", cur.StartedAt)
		} else if !cur.StartedAt.Equal(st.start) {
			// Its lines follow the old process's in the log, but the
			// engine's timestamps cannot say where one ends: the old
			// process's last lines were seen stamped after its FinishedAt.
			// The sink tells them apart by GC cycle number.
			if !st.start.IsZero() { // not merely the first start of a created container
				st.sink.Reset()
				d.Log.Info("container restarted", "container", cur.Name, "started", cur.StartedAt)
			}
			st.start = cur.StartedAt
		}
		if err := d.stream(ctx, id, cur, st); err != nil && ctx.Err() == nil {
			d.Log.Warn("log stream broke, reconnecting", "container", cur.Name, "err", err)
			sleep(ctx, bo.next())
			continue
		}
		// The process ended (or the engine went away). A follow stream can
		// end before the engine has written the process's last lines to
		// the log, so read on without following a few times in the first
		// seconds, then only wait for a new process.
		for i := 0; ctx.Err() == nil; i++ {
			if i == 0 || i == 1 || i == 3 {
				if err := d.catchUp(ctx, id, cur, st); err != nil && ctx.Err() == nil {
					d.Log.Debug("log catch-up failed", "container", cur.Name, "err", err)
				}
			}
			now, err := d.Engine.Inspect(ctx, id)
			if dockerx.IsNotFound(err) {
				return
			}
			if err == nil && (now.Running && now.State != "restarting" || !now.StartedAt.Equal(cur.StartedAt)) {
				break
			}
			sleep(ctx, time.Second)
		}
	}
}

// stream follows the log of the running process from st.since() until the
// process ends. A watchdog ends a follow the engine keeps open after the
// container stopped or was removed (seen on Docker 20.10).
func (d *Docker) stream(ctx context.Context, id string, cur dockerx.Container, st *stream) error {
	if !cur.Running {
		return nil
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for {
			sleep(sctx, 2*time.Second)
			if sctx.Err() != nil {
				return
			}
			now, err := d.Engine.Inspect(sctx, id)
			if dockerx.IsNotFound(err) || err == nil && (!now.Running || !now.StartedAt.Equal(cur.StartedAt)) {
				cancel()
				return
			}
		}
	}()
	rc, err := d.Engine.Logs(sctx, id, st.since(), true)
	if err != nil {
		if sctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	defer rc.Close()
	err = d.read(rc, cur.Tty, st)
	if sctx.Err() != nil && ctx.Err() == nil {
		return nil // the watchdog's doing: the process ended
	}
	return err
}

// catchUp reads whatever the log holds after st.since(), without following.
func (d *Docker) catchUp(ctx context.Context, id string, cur dockerx.Container, st *stream) error {
	rc, err := d.Engine.Logs(ctx, id, st.since(), false)
	if dockerx.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	return d.read(rc, cur.Tty, st)
}

// read handles one log stream to its end.
func (d *Docker) read(r io.Reader, tty bool, st *stream) error {
	if tty {
		var sp splitter
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			sp.write(buf[:n], func(l []byte) { st.message(l, nil) })
			if err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	}
	err := dockerx.Demux(r, func(s dockerx.Stream, p []byte) {
		sp := &st.out
		if s == dockerx.Stderr {
			sp = &st.err
		}
		st.message(p, sp)
	})
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// message handles one log message: "<RFC 3339 time> <text>", the text
// ending in a newline unless the engine split a long line.
func (st *stream) message(p []byte, sp *splitter) {
	sep := bytes.IndexByte(p, ' ')
	if sep < 0 {
		return // not from a Timestamps stream: nothing to place it by
	}
	ts, err := time.Parse(time.RFC3339Nano, string(p[:sep]))
	if err != nil {
		return
	}
	out := 0
	if sp == &st.err {
		out = 1
	}
	if ts.After(st.last[out]) {
		st.last[out] = ts
	}
	if ts.After(st.newest) {
		st.newest = ts
	}
	horizon := st.newest.Add(-dedupeWindow)
	if ts.Before(horizon) {
		return // handled by an earlier read
	}
	key := string(rune('0'+out)) + string(p)
	if _, dup := st.seen[key]; dup {
		return
	}
	st.seen[key] = ts
	if len(st.seen) > 4096 {
		for k, t := range st.seen {
			if t.Before(horizon) {
				delete(st.seen, k)
			}
		}
	}
	st.ts = ts
	text := p[sep+1:]
	if sp == nil { // TTY: already a line
		st.sink.Line(ts, text)
		return
	}
	sp.write(text, st.emit)
	// The engine cuts a line it is still waiting on at exactly its buffer
	// size; a shorter message without a newline is what a process printed
	// last before it died (a gc line torn by SIGKILL). Ending it here keeps
	// the next process's first line from being glued onto it.
	if n := len(text); n > 0 && n < enginePartialSize && text[n-1] != '\n' {
		sp.flush(st.emit)
	}
}

// enginePartialSize is the size at which the engine's log copier splits a
// line without a newline into partial messages (moby daemon/logger/copier.go).
const enginePartialSize = 16 << 10

func (st *stream) emit(l []byte) { st.sink.Line(st.ts, l) }

type backoff struct {
	n   int
	max time.Duration
}

func (b *backoff) next() time.Duration {
	b.n++
	d := time.Second << min(b.n-1, 6)
	if b.max > 0 && d > b.max {
		d = b.max
	}
	return d
}

func (b *backoff) reset() { b.n = 0 }

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Read hands sink the log of ctr's current process from since (the
// container's start when earlier) to the log's end now, once, without
// following: what a run reads of a proxy's log at a cell's end.
func Read(ctx context.Context, e Engine, ctr dockerx.Container, since time.Time, sink Sink) error {
	if since.Before(ctr.StartedAt) {
		since = ctr.StartedAt
	}
	st := &stream{sink: sink, start: ctr.StartedAt, seen: map[string]time.Time{}}
	st.last[0], st.last[1] = since, since
	return (&Docker{Engine: e}).catchUp(ctx, ctr.ID, ctr, st)
}
