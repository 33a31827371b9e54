package fastserver

import (
	"bytes"
	"io"
	"net/http"
	"time"

	"proxybench/origins/internal/contract"
)

type route uint8

const (
	routeNone route = iota
	routeRoot
	routeHealthz
	routeEcho
	routeBytes
	routeDelay
	routeStatus
)

// match maps a path to a route and its parameter. Unlike net/http it never
// cleans or unescapes: contract.CleanPath has already refused such paths.
func match(path []byte) (route, []byte) {
	switch string(path) { // no allocation: the compiler compares in place
	case "/":
		return routeRoot, nil
	case "/healthz":
		return routeHealthz, nil
	case "/echo":
		return routeEcho, nil
	}
	for _, p := range [...]struct {
		prefix string
		r      route
	}{{"/bytes/", routeBytes}, {"/delay/", routeDelay}, {"/status/", routeStatus}} {
		if len(path) > len(p.prefix) && string(path[:len(p.prefix)]) == p.prefix {
			rest := path[len(p.prefix):]
			if bytes.IndexByte(rest, '/') >= 0 {
				return routeNone, nil
			}
			return p.r, rest
		}
	}
	return routeNone, nil
}

// handle answers the request in c.req; false means close the connection.
func (c *conn) handle() bool {
	q := &c.req
	if u := c.s.unavailable; u != nil && u.Load() {
		// The lab's 503 fault (Lab.Unavailable): every request, whatever its route.
		if !c.skipBody() {
			q.close = true
		}
		c.reply(http.StatusServiceUnavailable, contract.TextPlain, UnavailableBody, "")
		return !q.close
	}
	rt, param := routeNone, []byte(nil)
	if contract.CleanPath(q.path) {
		rt, param = match(q.path)
	}
	if rt == routeEcho && q.method == methodPost {
		return c.echo()
	}
	if !c.skipBody() {
		q.close = true
	}
	switch {
	case rt == routeNone:
		c.reply(http.StatusNotFound, contract.TextPlain, contract.NotFoundBody, "")
	case rt == routeEcho:
		c.reply(http.StatusMethodNotAllowed, contract.TextPlain, contract.MethodNotAllowedBody, contract.AllowPost)
	case q.method != methodGet && q.method != methodHead:
		c.reply(http.StatusMethodNotAllowed, contract.TextPlain, contract.MethodNotAllowedBody, contract.AllowGet)
	case rt == routeRoot:
		c.roots.Add(1)
		c.replyFixed(c.s.rootTail, contract.RootBody)
	case rt == routeHealthz:
		c.replyFixed(c.s.healthTail, contract.HealthBody)
	case rt == routeBytes:
		n, ok := contract.Parse(contract.BytesN, param)
		if !ok {
			c.reply(http.StatusBadRequest, contract.TextPlain, contract.BytesN.Reason(string(param)), "")
			break
		}
		c.replyBytes(http.StatusOK, contract.OctetStream, contract.Bytes(n))
	case rt == routeDelay:
		ms, ok := contract.Parse(contract.DelayMS, param)
		if !ok {
			c.reply(http.StatusBadRequest, contract.TextPlain, contract.DelayMS.Reason(string(param)), "")
			break
		}
		// Answers already buffered for a pipeline go out before the wait.
		if c.w.Buffered() > 0 && c.w.Flush() != nil {
			return false
		}
		time.Sleep(time.Duration(ms) * time.Millisecond) // a runtime timer: thousands cost only their goroutines
		c.scratch = contract.AppendDelayBody(c.scratch[:0], ms)
		c.replyBytes(http.StatusOK, contract.TextPlain, c.scratch)
	case rt == routeStatus:
		code, ok := contract.Parse(contract.StatusCode, param)
		if !ok {
			c.reply(http.StatusBadRequest, contract.TextPlain, contract.StatusCode.Reason(string(param)), "")
			break
		}
		c.scratch = contract.AppendStatusBody(c.scratch[:0], code)
		c.replyBytes(code, contract.TextPlain, c.scratch)
	}
	return !q.close
}

// skipBody reads and drops a body nobody asked for, so the next request on
// the connection starts where it should; false when that is not worth it
// (big or chunked) and the connection must close instead.
func (c *conn) skipBody() bool {
	q := &c.req
	switch {
	case q.chunked:
		return false
	case q.contentLength <= 0:
		return true
	case q.contentLength > maxDiscard || q.expect100:
		return false // an expecting client sends nothing until told to
	}
	_, err := c.r.Discard(int(q.contentLength))
	return err == nil
}

// echo answers POST /echo. It reads the whole body before answering, so a
// client that writes all before it reads cannot deadlock against it.
func (c *conn) echo() bool {
	q := &c.req
	switch {
	case q.chunked:
		q.close = true
		c.reply(http.StatusLengthRequired, contract.TextPlain, contract.LengthRequiredBody, "")
		return false
	case q.contentLength > contract.MaxEchoBytes:
		q.close = true
		c.reply(http.StatusRequestEntityTooLarge, contract.TextPlain, contract.TooLargeBody, "")
		return false
	}
	n := max(int(q.contentLength), 0)
	if q.expect100 && n > 0 {
		c.w.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if c.w.Flush() != nil {
			return false
		}
	}
	buf := c.body
	if cap(buf) < n {
		buf = make([]byte, n)
		if n <= keepBodyBuf {
			c.body = buf
		}
	}
	buf = buf[:n]
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return false // the client left mid-body; nobody to answer
	}
	ctype := contract.OctetStream
	if len(q.ctype) > 0 {
		ctype = string(q.ctype) // allocates; echo is not the hot path
	}
	c.replyBytes(http.StatusOK, ctype, buf)
	return !q.close
}

// replyFixed answers 200 with a prebuilt tail: three buffer copies in all.
func (c *conn) replyFixed(tail []byte, body string) {
	if c.req.close || c.req.http10 || c.req.method == methodHead {
		c.reply(http.StatusOK, contract.TextPlain, body, "")
		return
	}
	c.w.WriteString("HTTP/1.1 200 OK\r\n")
	c.w.Write(*c.s.date.Load())
	c.w.Write(tail)
}

// replyError answers a request whose head could not be read.
func (c *conn) replyError(status int) {
	c.reply(status, contract.TextPlain, http.StatusText(status)+"\n", "")
}

func (c *conn) reply(status int, ctype, body, allow string) {
	c.writeHead(status, ctype, len(body), allow)
	if c.req.method != methodHead && contract.StatusHasBody(status) {
		c.w.WriteString(body)
	}
}

func (c *conn) replyBytes(status int, ctype string, body []byte) {
	c.writeHead(status, ctype, len(body), "")
	if c.req.method != methodHead && contract.StatusHasBody(status) {
		c.w.Write(body)
	}
}

// writeHead writes the status line and headers. Its pieces go straight
// into the connection's write buffer: no per-request allocation.
// bufio.Writer keeps the first write error and Flush returns it, so the
// writes here and in reply are not checked one by one.
func (c *conn) writeHead(status int, ctype string, n int, allow string) {
	w := c.w
	w.WriteString("HTTP/1.1 ")
	c.writeUint(status)
	w.WriteByte(' ')
	w.WriteString(http.StatusText(status))
	w.WriteString("\r\n")
	w.Write(*c.s.date.Load())
	w.WriteString("X-Origin: ")
	w.WriteString(c.s.name)
	w.WriteString("\r\n")
	if contract.StatusHasFraming(status) {
		w.WriteString("Content-Type: ")
		w.WriteString(ctype)
		w.WriteString("\r\nContent-Length: ")
		c.writeUint(n)
		w.WriteString("\r\n")
	}
	if allow != "" {
		w.WriteString("Allow: ")
		w.WriteString(allow)
		w.WriteString("\r\n")
	}
	switch {
	case c.req.close:
		w.WriteString("Connection: close\r\n")
	case c.req.http10:
		w.WriteString("Connection: keep-alive\r\n")
	}
	w.WriteString("\r\n")
}
