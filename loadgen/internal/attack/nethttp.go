package attack

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"time"
)

// stdDoer sends through net/http: used for https URLs (the lean client
// speaks plain HTTP/1.1 only) and as the reference the lean client is
// benchmarked and tested against (WithNetHTTP).
type stdDoer struct {
	client *http.Client
	spec   *Spec
	origin string
	buf    []byte
}

func newStdTransport(s *Spec, conns int) *http.Transport {
	return &http.Transport{
		Proxy:               nil, // never a proxy from the environment: we measure the target
		DialContext:         (&net.Dialer{KeepAlive: -1}).DialContext,
		DisableCompression:  true,
		DisableKeepAlives:   s.NewConnPerRequest,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{}, // no HTTP/2
		TLSClientConfig:     &tls.Config{},
	}
}

func (d *stdDoer) do(deadline time.Time) (response, error) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var body io.Reader
	if len(d.spec.Body) > 0 {
		body = bytes.NewReader(d.spec.Body)
	}
	method := d.spec.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, d.spec.URL, body)
	if err != nil {
		return response{}, err
	}
	for k, vs := range d.spec.Header {
		req.Header[k] = vs
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "proxybench-loadgen")
	}
	res, err := d.client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	if d.buf == nil {
		d.buf = make([]byte, 32<<10)
	}
	n, err := io.CopyBuffer(io.Discard, res.Body, d.buf)
	r := response{code: res.StatusCode, bytes: n, originOK: d.origin == "" || res.Header.Get("X-Origin") == d.origin}
	return r, err
}

func (d *stdDoer) close() {}
