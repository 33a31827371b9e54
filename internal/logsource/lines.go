// Package logsource owns getting a Go program's stderr to a Sink line by
// line: followed from Docker containers found by label (demultiplexed,
// across restarts and engine outages, no line twice and none missed), read
// once up to now (Read), or read from a file or stdin for programs run
// outside Docker.
package logsource

import (
	"bytes"
	"time"
)

// Sink receives the lines of one program.
type Sink interface {
	// Line is one line without its newline, logged at ts; line is only
	// valid during the call.
	Line(ts time.Time, line []byte)
	// Reset says a new process started (its GC cycle numbers restart).
	// Lines of the old process may still arrive after it: a source knows a
	// restart happened, not exactly where in the log.
	Reset()
}

// MaxLine bounds a line kept while waiting for its newline; a longer one
// is cut there, so a program printing without newlines cannot exhaust
// memory.
const MaxLine = 64 << 10

// splitter joins chunks into lines. A chunk may hold many lines or part of
// one; CR before LF stays with the line (the parser drops it).
type splitter struct {
	buf []byte
}

// write feeds p and calls emit for each completed line.
func (s *splitter) write(p []byte, emit func([]byte)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.buf = append(s.buf, p...)
			if len(s.buf) >= MaxLine {
				emit(s.buf)
				s.buf = s.buf[:0]
			}
			return
		}
		if len(s.buf) == 0 {
			emit(p[:i])
		} else {
			s.buf = append(s.buf, p[:i]...)
			emit(s.buf)
			s.buf = s.buf[:0]
		}
		p = p[i+1:]
	}
}

// flush emits a last line that had no newline.
func (s *splitter) flush(emit func([]byte)) {
	if len(s.buf) > 0 {
		emit(s.buf)
		s.buf = s.buf[:0]
	}
}
