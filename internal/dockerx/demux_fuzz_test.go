package dockerx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzDemux: the engine's multiplexed log stream, which carries whatever the
// proxies print. Any bytes: io.EOF or an error saying "demux: ...", never a
// panic, and never more payload than the bytes read; frames written the
// engine's way come back exactly, in order.
func FuzzDemux(f *testing.F) {
	frame := func(s Stream, p string) []byte {
		h := make([]byte, 8, 8+len(p))
		h[0] = byte(s)
		binary.BigEndian.PutUint32(h[4:], uint32(len(p)))
		return append(h, p...)
	}
	f.Add(append(frame(Stdout, "2026-03-01T12:00:00Z hello\n"), frame(Stderr, "gc 1 @0.1s 0%: x\n")...))
	f.Add(frame(Stderr, ""))
	f.Add(frame(Stdout, "cut")[:9])
	f.Add([]byte("\x01\x00\x00\x00\xff\xff\xff\xff"))
	f.Add([]byte("\x03\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("hello world, not framed"))
	f.Fuzz(func(t *testing.T, data []byte) {
		read := 0
		err := Demux(bytes.NewReader(data), func(s Stream, p []byte) {
			if s > Stderr {
				t.Fatalf("stream %d handed out", s)
			}
			read += 8 + len(p)
		})
		if read > len(data) {
			t.Fatalf("%d bytes of frames out of %d bytes", read, len(data))
		}
		if !errors.Is(err, io.EOF) && (err == nil || !strings.HasPrefix(err.Error(), "demux: ")) {
			t.Fatalf("Demux ended with %v, want io.EOF or a demux: error", err)
		}

		// The same bytes as payloads, cut at each 0xff and framed.
		var enc bytes.Buffer
		var want []string
		for i, p := range bytes.Split(data, []byte{0xff}) {
			enc.Write(frame(Stream(i%3), string(p)))
			want = append(want, string(rune('0'+i%3))+string(p))
		}
		var got []string
		if err := Demux(&enc, func(s Stream, p []byte) { got = append(got, string(rune('0'+s))+string(p)) }); !errors.Is(err, io.EOF) {
			t.Fatalf("well-formed stream ended with %v", err)
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("frames %q came back as %q", want, got)
		}
	})
}
