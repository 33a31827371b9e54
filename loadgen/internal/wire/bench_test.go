package wire

import "testing"

// BenchmarkReadResponse is the parser alone on a typical small response.
func BenchmarkReadResponse(b *testing.B) {
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Origin: fast\r\nDate: Mon, 30 Nov 2026 05:00:00 GMT\r\nContent-Length: 18\r\n\r\nhello, proxybench\n")
	rd := &repeatReader{b: resp}
	br := newBufReader(rd)
	origin := []byte("fast")
	b.SetBytes(int64(len(resp)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := readResponse(br, false, origin, defaultLimits); err != nil {
			b.Fatal(err)
		}
	}
}

type repeatReader struct {
	b   []byte
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.b[r.off:])
		n += c
		r.off = (r.off + c) % len(r.b)
	}
	return n, nil
}
