package fastserver

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
)

type method uint8

const (
	methodOther method = iota
	methodGet
	methodHead
	methodPost
)

// request is the part of a request head the contract needs. Its slices are
// copies owned by the connection and reused by the next request.
type request struct {
	method        method
	path          []byte // target up to '?'
	http10        bool
	close         bool  // answer with Connection: close and hang up
	contentLength int64 // -1: none given
	chunked       bool
	expect100     bool
	ctype         []byte
}

// maxContentLength keeps the Content-Length parser far from overflow.
const maxContentLength = 1 << 50

// readRequest parses a request head into c.req. It returns 0, or the status
// to refuse the request with (the connection is then closed).
func (c *conn) readRequest() int {
	q := &c.req
	q.method, q.path, q.http10, q.close = methodOther, q.path[:0], false, false
	q.contentLength, q.chunked, q.expect100, q.ctype = -1, false, false, q.ctype[:0]

	line, err := c.r.ReadSlice('\n')
	if err != nil {
		if err == bufio.ErrBufferFull {
			return http.StatusRequestURITooLong
		}
		return http.StatusBadRequest
	}
	line = trimEOL(line)
	sp1 := bytes.IndexByte(line, ' ')
	sp2 := bytes.LastIndexByte(line, ' ')
	if sp1 <= 0 || sp2 <= sp1+1 {
		return http.StatusBadRequest
	}
	m, target, proto := line[:sp1], line[sp1+1:sp2], line[sp2+1:]
	switch string(m) {
	case "GET":
		q.method = methodGet
	case "HEAD":
		q.method = methodHead
	case "POST":
		q.method = methodPost
	default:
		if !isToken(m) {
			return http.StatusBadRequest
		}
	}
	switch string(proto) {
	case "HTTP/1.1":
	case "HTTP/1.0":
		q.http10, q.close = true, true
	default:
		return http.StatusBadRequest
	}
	for _, b := range target {
		if b <= ' ' || b == 0x7f {
			return http.StatusBadRequest
		}
	}
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		target = target[:i]
	}
	q.path = append(q.path, target...)

	for n := 0; ; n++ {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			if err == bufio.ErrBufferFull {
				return http.StatusRequestHeaderFieldsTooLarge
			}
			return http.StatusBadRequest
		}
		line = trimEOL(line)
		if len(line) == 0 {
			break
		}
		if n == maxHeaders {
			return http.StatusRequestHeaderFieldsTooLarge
		}
		if status := q.header(line); status != 0 {
			return status
		}
	}
	if q.chunked && q.contentLength >= 0 {
		return http.StatusBadRequest // both framings: a smuggling attempt or a broken client
	}
	return 0
}

// header reads one header line into q.
func (q *request) header(line []byte) int {
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 || !isToken(line[:colon]) {
		return http.StatusBadRequest // also refuses obs-fold and "Name :" forms
	}
	name, value := line[:colon], trimOWS(line[colon+1:])
	for _, c := range value {
		if c < ' ' && c != '\t' || c == 0x7f {
			return http.StatusBadRequest // a control byte would reach the echoed Content-Type
		}
	}
	switch {
	case equalFold(name, "content-length"):
		v, ok := parseLength(value)
		if !ok || (q.contentLength >= 0 && q.contentLength != v) {
			return http.StatusBadRequest
		}
		q.contentLength = v
	case equalFold(name, "transfer-encoding"):
		// Only chunked can frame a request body, and it must come last.
		if !equalFold(lastToken(value), "chunked") {
			return http.StatusNotImplemented
		}
		q.chunked = true
	case equalFold(name, "connection"):
		for len(value) > 0 {
			var tok []byte
			tok, value, _ = bytes.Cut(value, []byte{','})
			tok = trimOWS(tok)
			switch {
			case equalFold(tok, "close"):
				q.close = true
			case equalFold(tok, "keep-alive") && q.http10:
				q.close = false
			}
		}
	case equalFold(name, "expect"):
		q.expect100 = equalFold(value, "100-continue")
	case equalFold(name, "content-type"):
		q.ctype = append(q.ctype[:0], value...)
	}
	return 0
}

func parseLength(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
		if v > maxContentLength {
			return 0, false
		}
	}
	return v, true
}

// trimOWS drops the optional white space around a header value.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func trimEOL(b []byte) []byte {
	b = b[:len(b)-1]
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}

// equalFold compares ASCII case-insensitively; lower must be lower case.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// lastToken is the last element of a comma-separated list.
func lastToken(b []byte) []byte {
	if i := bytes.LastIndexByte(b, ','); i >= 0 {
		b = b[i+1:]
	}
	return trimOWS(b)
}

// isToken reports whether b is an RFC 9110 token.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
