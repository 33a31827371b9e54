package wire

import (
	"bytes"
	"io"
)

// respParser parses one HTTP/1.1 response incrementally from whatever bytes
// have arrived, for the event loop (which cannot block in a bufio.Reader).
// It follows readResponse rule for rule; FuzzParserMatchesReadResponse holds
// them to the same answers.
type respParser struct {
	head   bool
	origin []byte
	lim    Limits

	state  pstate
	seen   bool // any byte of this response consumed
	minor  int
	h      headers
	remain int64 // body or chunk bytes still to come
	hused  int   // bytes of the head (interim responses included), then of the trailers
	resp   Response
	keep   bool
}

type pstate uint8

const (
	pStatus pstate = iota
	pHeaders
	pBody
	pChunkSize
	pChunkData
	pChunkCRLF
	pTrailers
	pUntilClose
	pDone
)

// maxLine bounds a status, header or chunk-size line, like the bufio client.
const maxLine = 16 << 10

func (p *respParser) reset() {
	*p = respParser{head: p.head, origin: p.origin, lim: p.lim}
}

// feed consumes bytes from b; done is true once a whole response has been
// parsed (p.resp, p.keep hold it). Unconsumed bytes must be fed again with
// more data appended.
func (p *respParser) feed(b []byte) (n int, done bool, err error) {
	for n < len(b) {
		if len(b) > n {
			p.seen = true
		}
		switch p.state {
		case pBody, pChunkData:
			k := int64(len(b) - n)
			if k > p.remain {
				k = p.remain
			}
			n += int(k)
			p.remain -= k
			p.resp.Bytes += k
			if p.remain > 0 {
				return n, false, nil
			}
			if p.state == pBody {
				p.state = pDone
				return n, true, nil
			}
			p.state = pChunkCRLF
			continue
		case pUntilClose:
			k := int64(len(b) - n)
			if k > p.lim.Body-p.resp.Bytes {
				return n, false, errBodyTooLarge(p.lim.Body)
			}
			p.resp.Bytes += k
			return len(b), false, nil
		}
		inHead := p.state == pStatus || p.state == pHeaders || p.state == pTrailers
		i := bytes.IndexByte(b[n:], '\n')
		if i < 0 {
			rest := len(b) - n
			switch {
			case rest >= maxLine && inHead:
				return n, false, errLineTooLong
			case rest >= maxLine:
				return n, false, errProto("line longer than 16 KiB")
			case inHead && rest > p.lim.Header-p.hused:
				return n, false, errHeaderTooLarge(p.lim.Header)
			}
			return n, false, nil
		}
		raw := b[n : n+i+1]
		n += i + 1
		if inHead {
			if p.hused += len(raw); p.hused > p.lim.Header {
				return n, false, errHeaderTooLarge(p.lim.Header)
			}
		}
		line := bytes.TrimRight(raw, "\r\n")
		switch p.state {
		case pStatus:
			code, minor, err := parseStatusLine(raw)
			if err != nil {
				return n, false, err
			}
			p.resp.Code, p.minor = code, minor
			p.h = headers{length: -1}
			p.state = pHeaders
		case pHeaders:
			if len(line) > 0 {
				if err := p.h.parseLine(line, p.origin); err != nil {
					return n, false, err
				}
				continue
			}
			code := p.resp.Code
			if code == 101 {
				return n, false, errProto("unexpected 101 switching protocols")
			}
			if code < 200 { // interim response: the real one follows
				p.state = pStatus
				continue
			}
			p.resp.OriginOK = p.origin == nil || p.h.originOK
			p.keep = !p.h.close && (p.minor >= 1 || p.h.keepAlive)
			switch {
			case p.head || code == 204 || code == 304:
				p.state = pDone
				return n, true, nil
			case p.h.chunked:
				p.state = pChunkSize
			case p.h.length > p.lim.Body:
				return n, false, errBodyTooLarge(p.lim.Body)
			case p.h.length >= 0:
				p.remain = p.h.length
				if p.remain == 0 {
					p.state = pDone
					return n, true, nil
				}
				p.state = pBody
			default:
				p.keep = false
				p.state = pUntilClose
			}
		case pChunkSize:
			if j := bytes.IndexByte(line, ';'); j >= 0 {
				line = line[:j]
			}
			size, ok := parseUint(bytes.TrimSpace(line), 16)
			if !ok {
				return n, false, errProto("bad chunk size %q", trim(line))
			}
			if size == 0 {
				p.state = pTrailers
				p.hused = 0 // the trailers have a head's budget
				continue
			}
			if size > p.lim.Body-p.resp.Bytes {
				return n, false, errBodyTooLarge(p.lim.Body)
			}
			p.remain = size
			p.state = pChunkData
		case pChunkCRLF:
			if len(line) != 0 {
				return n, false, errProto("chunk not followed by CRLF")
			}
			p.state = pChunkSize
		case pTrailers:
			if len(line) == 0 {
				p.state = pDone
				return n, true, nil
			}
			var trailer headers
			if err := trailer.parseLine(line, nil); err != nil {
				return n, false, err
			}
		}
	}
	return n, false, nil
}

// eof tells the parser the server closed the connection: it completes a
// body delimited by the close, and otherwise says how the response was cut.
func (p *respParser) eof() (done bool, err error) {
	switch {
	case p.state == pUntilClose:
		p.state = pDone
		return true, nil
	case !p.seen:
		return false, &noBytesError{io.EOF}
	default:
		return false, io.ErrUnexpectedEOF
	}
}
