package wire

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// handle processes one frame; an error is the connection's.
func (c *h2Conn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.DataFrame:
		n := int64(f.Header().Length) // padding included: it counts against the window
		if c.recv += n; c.recv > h2Window/2 {
			c.fr.WriteWindowUpdate(0, uint32(c.recv)) //nolint:errcheck // Flush reports it
			c.recv = 0
		}
		s := c.stream(f.StreamID)
		if s == nil {
			return nil // a stream we reset
		}
		s.got = true
		s.resp.Bytes += int64(len(f.Data()))
		if s.resp.Bytes > c.l.lim.Body {
			c.reset(s, errBodyTooLarge(c.l.lim.Body))
			return nil
		}
		if f.StreamEnded() {
			c.end(s)
		}
	case *http2.HeadersFrame:
		return c.headers(c.stream(f.StreamID), f.HeaderBlockFragment(), f.HeadersEnded(), f.StreamEnded())
	case *http2.ContinuationFrame:
		return c.headers(c.cur, f.HeaderBlockFragment(), f.HeadersEnded(), false)
	case *http2.RSTStreamFrame:
		if s := c.stream(f.StreamID); s != nil {
			if f.ErrCode == http2.ErrCodeRefusedStream && !s.retried && !s.got {
				// Not processed (RFC 9113 8.7): send it again.
				s.retried = true
				r := *s
				c.free(s)
				r.id = 0
				c.retry = append(c.retry, r)
				return nil
			}
			c.finish(s, &streamResetError{f.ErrCode})
		}
	case *http2.SettingsFrame:
		if !f.IsAck() {
			c.settings(f)
		}
	case *http2.PingFrame:
		if !f.IsAck() {
			c.fr.WritePing(true, f.Data) //nolint:errcheck // Flush reports it
		}
	case *http2.GoAwayFrame:
		// Streams above the last one the server processes never ran:
		// they are sent again on a new connection.
		c.goaway = true
		for i := range c.st {
			if s := &c.st[i]; s.id > f.LastStreamID {
				r := *s
				c.free(s)
				r.id, r.got, r.resp, r.head, r.err = 0, false, Response{}, 0, nil
				c.retry = append(c.retry, r)
			}
		}
	case *http2.PushPromiseFrame:
		return errProto("PUSH_PROMISE although SETTINGS_ENABLE_PUSH is 0")
	}
	return nil
}

// headers decodes a header block fragment of s (nil: a stream we reset,
// decoded all the same to keep the HPACK state).
func (c *h2Conn) headers(s *h2Stream, frag []byte, endHeaders, endStream bool) error {
	if s == nil {
		c.gone = h2Stream{}
		s = &c.gone
	}
	c.cur = s
	s.got = true
	if _, err := c.dec.Write(frag); err != nil {
		return errProto("HPACK: %v", err)
	}
	if !endHeaders {
		return nil
	}
	if err := c.dec.Close(); err != nil {
		return errProto("HPACK: %v", err)
	}
	if s == &c.gone {
		return nil
	}
	if s.err != nil {
		c.reset(s, s.err)
		return nil
	}
	if s.resp.Code >= 100 && s.resp.Code < 200 && !endStream {
		s.resp.Code = 0 // an interim response: the final one follows
		return nil
	}
	if endStream {
		c.end(s)
	}
	return nil
}

// emit takes one decoded header field of the current stream.
func (c *h2Conn) emit(f hpack.HeaderField) {
	s := c.cur
	if s.head += len(f.Name) + len(f.Value) + 32; s.head > c.l.lim.Header && s.err == nil {
		s.err = errHeaderTooLarge(c.l.lim.Header)
	}
	switch f.Name {
	case ":status":
		if code, err := strconv.Atoi(f.Value); err == nil && s.resp.Code == 0 {
			s.resp.Code = code
		}
	case "x-origin":
		s.resp.OriginOK = c.l.origin == "" || f.Value == c.l.origin
	}
}

// end completes a stream whose response ended.
func (c *h2Conn) end(s *h2Stream) {
	if s.resp.Code == 0 {
		c.finish(s, errProto("HTTP/2 response without :status"))
		return
	}
	if c.l.origin == "" {
		s.resp.OriginOK = true
	}
	c.used = true
	c.finish(s, nil)
}

// reset fails s with err and tells the server to stop sending it.
func (c *h2Conn) reset(s *h2Stream, err error) {
	c.fr.WriteRSTStream(s.id, http2.ErrCodeCancel) //nolint:errcheck // Flush reports it
	c.finish(s, err)
}

func (c *h2Conn) finish(s *h2Stream, err error) {
	done := c.sink.Now()
	resp := s.resp
	if err != nil {
		resp = Response{}
	}
	c.sink.Done(s.sent, done, resp, err)
	c.sink.InFlight(-1)
	c.free(s)
}

func (c *h2Conn) free(s *h2Stream) {
	*s = h2Stream{}
	c.active--
}

// expire fails the streams past their deadline with a timeout.
func (c *h2Conn) expire(now time.Time) {
	for i := range c.st {
		if s := &c.st[i]; s.id != 0 && !now.Before(s.deadline) {
			c.reset(s, os.ErrDeadlineExceeded)
		}
	}
	c.dl = time.Time{}
}

// failAll ends the connection: its streams fail with err, except those of
// a connection that had carried responses and got no byte of theirs (the
// server closed it as they were sent, like a stale keep-alive one), which
// are sent once more on a new connection.
func (c *h2Conn) failAll(err error, now time.Time) {
	for i := range c.st {
		s := &c.st[i]
		if s.id == 0 {
			continue
		}
		if c.used && !s.got && !s.retried && now.Before(s.deadline) && !errors.Is(err, os.ErrDeadlineExceeded) {
			r := *s
			c.free(s)
			r.id, r.retried = 0, true
			c.retry = append(c.retry, r)
			continue
		}
		c.finish(s, err)
	}
	c.close()
}

func (c *h2Conn) close() {
	if c.c != nil {
		c.c.Close()
		c.c = nil
	}
}

// frameErr is a Framer's error with the reasons of Classify: its
// connection and stream errors are protocol errors.
func frameErr(err error) error {
	var ce http2.ConnectionError
	var se http2.StreamError
	if errors.As(err, &ce) || errors.As(err, &se) {
		return errProto("HTTP/2: %v", err)
	}
	return err
}

// streamResetError is an RST_STREAM from the server: reason reset.
type streamResetError struct{ code http2.ErrCode }

func (e *streamResetError) Error() string {
	return "HTTP/2 stream reset by the server: " + e.code.String()
}
func (e *streamResetError) Unwrap() error { return syscall.ECONNRESET }
