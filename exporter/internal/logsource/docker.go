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
	// start names the process being counted (container StartedAt).
	start time.Time
	// A restart seen by inspect: lines logged after boundary (the previous
	// process's FinishedAt) belong to the process started at nextStart.
	pending   bool
	boundary  time.Time
	nextStart time.Time
	// last is the newest line timestamp handled and atLast how many lines
	// carried exactly it; a reconnect asks for lines since last (the engine
	// includes last) and skips the first atLast of them.
	last          time.Time
	atLast        int
	skip          int
	out, err      splitter
	ts            time.Time
	badTimestamps int
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
			st = &stream{sink: d.Open(cur), start: cur.StartedAt, last: cur.FinishedAt}
			d.Log.Info("following gctrace", "container", cur.Name, "service", cur.Service, "started", cur.StartedAt)
		} else if !cur.StartedAt.Equal(st.start) && !cur.StartedAt.Equal(st.nextStart) {
			st.pending, st.boundary, st.nextStart = true, cur.FinishedAt, cur.StartedAt
			d.Log.Info("container restarted", "container", cur.Name, "started", cur.StartedAt)
		}
		rc, err := d.Engine.Logs(ctx, id, st.last, true)
		if err != nil {
			sleep(ctx, bo.next())
			continue
		}
		st.skip = st.atLast
		err = d.read(rc, cur.Tty, st)
		rc.Close()
		if err != nil && ctx.Err() == nil {
			d.Log.Warn("log stream broke, reconnecting", "container", cur.Name, "err", err)
			sleep(ctx, bo.next())
			continue
		}
		// The stream ended: the container stopped (or the engine went
		// away). Wait for it to run a new process before reading on.
		for ctx.Err() == nil {
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
		st.badTimestamps++
		return
	}
	ts, err := time.Parse(time.RFC3339Nano, string(p[:sep]))
	if err != nil {
		st.badTimestamps++
		return
	}
	switch {
	case ts.Before(st.last):
		return
	case ts.Equal(st.last):
		if st.skip > 0 {
			st.skip--
			return
		}
		st.atLast++
	default:
		st.last, st.atLast = ts, 1
	}
	if st.pending && ts.After(st.boundary) {
		st.pending, st.start, st.nextStart = false, st.nextStart, time.Time{}
		st.out.buf, st.err.buf = st.out.buf[:0], st.err.buf[:0]
		st.sink.Reset()
	}
	st.ts = ts
	text := p[sep+1:]
	if sp == nil { // TTY: already a line
		st.sink.Line(ts, text)
		return
	}
	sp.write(text, st.emit)
}

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
