package logsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Reader feeds sink every line of r, stamped with now() when read, until
// r ends (then a last unterminated line is flushed) or ctx ends. For stdin
// or a pipe.
func Reader(ctx context.Context, r io.Reader, now func() time.Time, sink Sink) error {
	var sp splitter
	buf := make([]byte, 32<<10)
	for {
		if ctx.Err() != nil {
			return nil
		}
		n, err := r.Read(buf)
		ts := now()
		sp.write(buf[:n], func(l []byte) { sink.Line(ts, l) })
		if errors.Is(err, io.EOF) {
			sp.flush(func(l []byte) { sink.Line(ts, l) })
			return nil
		}
		if err != nil {
			return fmt.Errorf("read gctrace input: %w", err)
		}
	}
}

// FollowFile reads the file at path from its start and keeps following it
// like tail -F: new lines as they are written (a partial line waits for its
// newline), and a file truncated or replaced by a new one (a restarted
// program) is read again from its start after a Reset. It polls every
// interval at end of file.
func FollowFile(ctx context.Context, path string, interval time.Duration, now func() time.Time, sink Sink) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open gctrace file: %w (is the path right? use - for stdin)", err)
	}
	defer func() { f.Close() }()
	var sp splitter
	var off int64
	buf := make([]byte, 32<<10)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		n, err := f.Read(buf)
		off += int64(n)
		if n > 0 {
			ts := now()
			sp.write(buf[:n], func(l []byte) { sink.Line(ts, l) })
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if st, err := os.Stat(path); err == nil {
			cur, cerr := f.Stat()
			if cerr == nil && (!os.SameFile(st, cur) || st.Size() < off) {
				nf, err := os.Open(path)
				if err != nil {
					continue // replaced but not yet readable; try next tick
				}
				f.Close()
				f, off = nf, 0
				sp.buf = sp.buf[:0]
				sink.Reset()
			}
		}
	}
}
