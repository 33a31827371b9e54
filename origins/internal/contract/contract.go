// Package contract owns the origin contract (origins/README.md)
// as code shared by the two Go origins, go (net/http) and fast (hand-rolled):
// fixed bodies, limits, the path-parameter parser and its one-line reasons,
// the canonical-path rule and the deterministic /bytes body. The node and
// python origins implement the same rules by hand; origins/contract_test.go
// holds all four to them.
package contract

import (
	"fmt"
	"strconv"
	"time"
)

// Fixed bodies. Every body ends in a newline so it reads well in a terminal.
const (
	RootBody             = "proxybench origin ok\n"
	HealthBody           = "ok\n"
	NotFoundBody         = "not found\n"
	MethodNotAllowedBody = "method not allowed\n"
	// LengthRequiredBody answers a chunked POST /echo: echo needs the size up
	// front so that all four origins can answer with Content-Length.
	LengthRequiredBody = "length required: send the body with Content-Length\n"
)

// Limits.
const (
	MaxBytes     = 16 << 20 // largest /bytes/{n}
	MaxDelayMS   = 60000    // largest /delay/{ms}
	MaxEchoBytes = 16 << 20 // largest POST /echo body
	// IdleTimeout is how long an idle keep-alive connection stays open. It
	// is longer than any proxy's upstream idle timeout (caddy: 2 min), so a
	// proxy never reuses a connection the origin is closing.
	IdleTimeout = 300 * time.Second
)

// Content types.
const (
	TextPlain   = "text/plain; charset=utf-8"
	OctetStream = "application/octet-stream"
)

// Allow header values for 405 answers.
const (
	AllowGet  = "GET, HEAD"
	AllowPost = "POST"
)

// TooLargeBody answers a POST /echo body over MaxEchoBytes.
var TooLargeBody = "body too large: want at most " + strconv.Itoa(MaxEchoBytes) + " bytes\n"

// Param is one path parameter: its name in reasons and its inclusive range.
type Param struct {
	Name     string
	Min, Max int
}

// The three path parameters of the contract.
var (
	BytesN     = Param{Name: "n", Min: 0, Max: MaxBytes}
	DelayMS    = Param{Name: "ms", Min: 0, Max: MaxDelayMS}
	StatusCode = Param{Name: "code", Min: 200, Max: 599}
)

// maxDigits bounds the parameter so the value cannot overflow anywhere
// (JavaScript numbers included); every valid value has fewer digits.
const maxDigits = 10

// Parse reads s as a parameter value: a canonical decimal (no sign, no
// leading zeros, ASCII digits only) within p's range. Each value thus has
// exactly one URL, and no language's lenient integer parsing leaks in.
func Parse[T ~string | ~[]byte](p Param, s T) (int, bool) {
	if len(s) == 0 || len(s) > maxDigits || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	if v < p.Min || v > p.Max {
		return 0, false
	}
	return v, true
}

// maxQuoted is how much of a bad parameter a reason repeats.
const maxQuoted = 32

// Reason is the one-line 400 body for a bad value s of p, e.g.
// `bad n "abc": want an integer 0..16777216`. The value is cut to 32 bytes
// and every byte outside printable ASCII, '"' and '\' becomes '?', so the
// body stays one bounded line and is byte-identical in every language.
func (p Param) Reason(s string) string {
	return fmt.Sprintf("bad %s \"%s\": want an integer %d..%d\n", p.Name, Sanitize(s), p.Min, p.Max)
}

// Sanitize cuts s to 32 bytes (adding "..." when cut) and replaces bytes
// outside 0x21..0x7e, '"' and '\' with '?'.
func Sanitize(s string) string {
	n := min(len(s), maxQuoted)
	b := make([]byte, 0, n+3)
	for i := 0; i < n; i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			c = '?'
		}
		b = append(b, c)
	}
	if len(s) > maxQuoted {
		b = append(b, "..."...)
	}
	return string(b)
}

// CleanPath reports whether p (the request target up to '?') is a path the
// origins route at all: it starts with '/', has no percent-escapes, no empty
// segment and no dot segment. Anything else is 404 in all four origins, so no
// server's own path cleaning or unescaping (net/http's ServeMux redirects,
// Python's "//" folding) makes them disagree.
func CleanPath[T ~string | ~[]byte](p T) bool {
	if len(p) == 0 || p[0] != '/' {
		return false
	}
	segStart := 1
	for i := 1; i <= len(p); i++ {
		if i < len(p) {
			switch p[i] {
			case '%':
				return false
			case '/':
			default:
				continue
			}
		}
		seg := p[segStart:i]
		// The root "/" is the only path allowed an empty (last) segment.
		if len(seg) == 0 && !(i == len(p) && len(p) == 1) {
			return false
		}
		if (len(seg) == 1 && seg[0] == '.') || (len(seg) == 2 && seg[0] == '.' && seg[1] == '.') {
			return false
		}
		segStart = i + 1
	}
	return true
}

// AppendDelayBody appends the /delay/{ms} body.
func AppendDelayBody(dst []byte, ms int) []byte {
	dst = append(dst, "delayed "...)
	dst = strconv.AppendInt(dst, int64(ms), 10)
	return append(dst, " ms\n"...)
}

// AppendStatusBody appends the /status/{code} body; see StatusHasBody.
func AppendStatusBody(dst []byte, code int) []byte {
	if !StatusHasBody(code) {
		return dst
	}
	dst = append(dst, "status "...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	return append(dst, '\n')
}

// StatusHasBody is false for 204, 205 and 304, which HTTP forbids content
// for: their /status answer is empty.
func StatusHasBody(code int) bool { return code != 204 && code != 205 && code != 304 }

// StatusHasFraming is false for 204 and 304: they carry neither
// Content-Length nor Content-Type (RFC 9110 §8.6, and net/http strips them).
// 205 carries Content-Length: 0.
func StatusHasFraming(code int) bool { return code != 204 && code != 304 }
