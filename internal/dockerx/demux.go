package dockerx

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Stream says which output of the container a chunk came from.
type Stream byte

// Streams as the engine numbers them in its multiplexed framing.
const (
	Stdin  Stream = 0
	Stdout Stream = 1
	Stderr Stream = 2
)

// maxFrame bounds one frame so a corrupt header cannot make us allocate
// gigabytes; the engine splits log messages at 16 KiB.
const maxFrame = 1 << 24

// Demux reads the engine's multiplexed stream (8-byte header: stream,
// 3 zero bytes, big-endian payload length; then the payload) and hands each
// payload to fn in order. The payload slice is only valid during the call.
// It returns io.EOF at a clean end between frames.
func Demux(r io.Reader, fn func(Stream, []byte)) error {
	var hdr [8]byte
	buf := make([]byte, 32<<10)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.ErrUnexpectedEOF {
				return fmt.Errorf("demux: truncated frame header: %w", err)
			}
			return err
		}
		st := Stream(hdr[0])
		if st > Stderr {
			return fmt.Errorf("demux: bad stream byte %d (is the container a TTY? its logs are not multiplexed)", hdr[0])
		}
		n := binary.BigEndian.Uint32(hdr[4:])
		if n > maxFrame {
			return fmt.Errorf("demux: frame of %d bytes exceeds %d", n, maxFrame)
		}
		if int(n) > cap(buf) {
			buf = make([]byte, n)
		}
		p := buf[:n]
		if _, err := io.ReadFull(r, p); err != nil {
			return fmt.Errorf("demux: truncated frame: %w", err)
		}
		fn(st, p)
	}
}
