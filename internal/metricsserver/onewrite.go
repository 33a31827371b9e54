package metricsserver

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
)

// oneWrite sends h's whole response in one write with its length. An
// exporter scrape is about 100 KB: through net/http's 4 KB buffer that is
// some 25 write syscalls a scrape, a visible share of the exporter's idle
// CPU.
func oneWrite(h http.Handler) http.Handler {
	pool := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := pool.Get().(*bytes.Buffer)
		defer pool.Put(buf)
		buf.Reset()
		bw := &bufferedWriter{ResponseWriter: w, buf: buf, status: http.StatusOK}
		h.ServeHTTP(bw, r)
		w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
		w.WriteHeader(bw.status)
		w.Write(buf.Bytes()) //nolint:errcheck // the scraper went away; nothing to tell it
	})
}

type bufferedWriter struct {
	http.ResponseWriter
	buf    *bytes.Buffer
	status int
}

func (b *bufferedWriter) WriteHeader(code int)        { b.status = code }
func (b *bufferedWriter) Write(p []byte) (int, error) { return b.buf.Write(p) }
