package attack

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"proxybench/loadgen/internal/load"
	"proxybench/loadgen/internal/wire"
)

// Defaults applied by validation.
const (
	DefaultTimeout = 10 * time.Second
	// DefaultMaxHeaderBytes bounds a response head. The lab's heads are a
	// few hundred bytes, and the proxies under test refuse far smaller
	// upstream heads than this by default (nginx proxy_buffer_size 4 or 8
	// KiB, HAProxy tune.bufsize 16 KiB); net/http's client allows 10 MiB.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxBodyBytes is 64 times the largest body of the scenarios
	// (payload-1m) and 4 times the largest the origins serve (/bytes/ up
	// to 16 MiB).
	DefaultMaxBodyBytes = 64 << 20
)

var defaultLimits = wire.Limits{Header: DefaultMaxHeaderBytes, Body: DefaultMaxBodyBytes}

// specLimits is the response bounds of s, defaults for what is unset.
func specLimits(s *Spec) wire.Limits {
	l := wire.Limits{Header: s.MaxHeaderBytes, Body: s.MaxBodyBytes}
	if l.Header <= 0 {
		l.Header = defaultLimits.Header
	}
	if l.Body <= 0 {
		l.Body = defaultLimits.Body
	}
	return l
}

// validate checks s and fills in defaults. Every error names the field and
// what to do, and comes before any traffic; the load model checks itself.
func (s *Spec) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	u, err := url.Parse(s.URL)
	switch {
	case s.URL == "":
		bad("spec URL is empty: give the full target, e.g. http://127.0.0.1:8882/fast/")
	case err != nil:
		bad("spec URL %q does not parse (%v): give e.g. http://127.0.0.1:8882/fast/", s.URL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		bad("spec URL %q has scheme %q: use http:// (or https://)", s.URL, u.Scheme)
	case u.Host == "":
		bad("spec URL %q has no host: use e.g. http://127.0.0.1:8882/fast/", s.URL)
	}
	s.Proto = specProto(s)
	switch _, perr := wire.ParseProto(string(s.Proto)); {
	case perr != nil:
		bad("spec Proto: %v", perr)
	case err == nil && s.Proto == ProtoH1 && u.Scheme == "https":
		bad("spec Proto h1 with the https URL %q: h1 is HTTP/1.1 over TCP; use tls, h2 or h3 (or an http:// URL)", s.URL)
	case err == nil && s.Proto.Secure() && u.Scheme == "http":
		bad("spec Proto %s with the http URL %q: it runs over TLS; use an https:// URL (a proxy's TLS port, stack.TLSURL)", s.Proto, s.URL)
	}
	switch {
	case s.Streams < 0:
		bad("spec Streams %d is negative: use the requests in flight per connection, e.g. 10 (0 = 1)", s.Streams)
	case s.Streams > 1 && !s.Proto.Multiplexed():
		bad("spec Streams %d with Proto %s: only h2 and h3 carry several requests at once on a connection; use more connections", s.Streams, s.Proto)
	}
	for _, v := range []struct {
		name string
		v    uint16
	}{{"MinVersion", s.TLS.MinVersion}, {"MaxVersion", s.TLS.MaxVersion}} {
		if v.v != 0 && v.v != tls.VersionTLS12 && v.v != tls.VersionTLS13 {
			bad("spec TLS %s %#x: use tls.VersionTLS12 or tls.VersionTLS13 (0 = 1.2 .. 1.3)", v.name, v.v)
		}
	}
	if s.TLS.MinVersion != 0 && s.TLS.MaxVersion != 0 && s.TLS.MinVersion > s.TLS.MaxVersion {
		bad("spec TLS MinVersion %s is above MaxVersion %s", tls.VersionName(s.TLS.MinVersion), tls.VersionName(s.TLS.MaxVersion))
	}
	if s.Method == "" {
		s.Method = "GET"
	}
	if strings.ContainsAny(s.Method, " \t\r\n/:") {
		bad("spec Method %q is not an HTTP method: use e.g. GET or POST", s.Method)
	}
	for k, vs := range s.Header {
		for _, v := range vs {
			if strings.ContainsAny(k+v, "\r\n") || strings.ContainsAny(k, " :") || k == "" {
				bad("spec Header %q: %q is not a valid header line: no CR/LF, no spaces or colons in the name", k, v)
			}
		}
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.Timeout < 0 {
		bad("spec Timeout %v is negative: use a positive per-request timeout such as 10s", s.Timeout)
	}
	if s.MaxHeaderBytes == 0 {
		s.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if s.MaxHeaderBytes < 0 {
		bad("spec MaxHeaderBytes %d is negative: use a positive bound such as %d (0 = the default)", s.MaxHeaderBytes, DefaultMaxHeaderBytes)
	}
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.MaxBodyBytes < 0 {
		bad("spec MaxBodyBytes %d is negative: use a positive bound such as %d (0 = the default)", s.MaxBodyBytes, DefaultMaxBodyBytes)
	}
	if err := load.CheckMaxRate(s.MaxRate); err != nil {
		bad("spec MaxRate: %v", err)
	}
	if s.Load == nil {
		bad("spec Load is empty: give a load model, e.g. load.Closed{Connections: 50, Duration: 10 * time.Second}")
	} else {
		if err := s.Load.Validate(); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") { // errors.Join: one problem a line
				bad("spec Load (%s): %s", s.Load.Name(), line)
			}
		}
	}
	return errors.Join(errs...)
}

// specProto is the protocol s speaks: Spec.Proto, or for "" h1 over
// http:// and tls over https://. validate resolves it into Spec.Proto
// once; only Engine, which a caller may ask before a run, works it out.
func specProto(s *Spec) Proto {
	if s.Proto != "" {
		return s.Proto
	}
	if isHTTPS(s.URL) {
		return ProtoTLS
	}
	return ProtoH1
}
