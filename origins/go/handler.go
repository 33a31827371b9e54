package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"proxybench/origins/internal/contract"
)

// newHandler routes the contract. Each GET pattern has a method-less twin
// answering 405, and "/" answers 404, so that ServeMux's own plain-text
// 404/405 bodies never reach a client.
func newHandler(name string) http.Handler {
	mux := http.NewServeMux()
	get := func(pattern string, h http.HandlerFunc) {
		mux.HandleFunc("GET "+pattern, h)
		mux.HandleFunc(pattern, notAllowed(contract.AllowGet))
	}
	get("/{$}", text(contract.RootBody))
	get("/healthz", text(contract.HealthBody))
	get("/bytes/{n}", bytesHandler)
	get("/delay/{ms}", delayHandler)
	get("/status/{code}", statusHandler)
	mux.HandleFunc("POST /echo", echoHandler)
	mux.HandleFunc("/echo", notAllowed(contract.AllowPost))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusNotFound, contract.TextPlain, contract.NotFoundBody)
	})
	return withOrigin(name, mux)
}

// withOrigin stamps X-Origin on every answer and sends paths the contract
// does not route (escapes, dot or empty segments, absolute-form targets) to
// 404 before ServeMux can clean or unescape them into a route.
func withOrigin(name string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["X-Origin"] = []string{name}
		path, _, _ := strings.Cut(r.RequestURI, "?")
		if !contract.CleanPath(path) {
			reply(w, http.StatusNotFound, contract.TextPlain, contract.NotFoundBody)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func text(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, contract.TextPlain, body)
	}
}

func notAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		reply(w, http.StatusMethodNotAllowed, contract.TextPlain, contract.MethodNotAllowedBody)
	}
}

func bytesHandler(w http.ResponseWriter, r *http.Request) {
	s := r.PathValue("n")
	n, ok := contract.Parse(contract.BytesN, s)
	if !ok {
		reply(w, http.StatusBadRequest, contract.TextPlain, contract.BytesN.Reason(s))
		return
	}
	replyBytes(w, http.StatusOK, contract.OctetStream, contract.Bytes(n))
}

func delayHandler(w http.ResponseWriter, r *http.Request) {
	s := r.PathValue("ms")
	ms, ok := contract.Parse(contract.DelayMS, s)
	if !ok {
		reply(w, http.StatusBadRequest, contract.TextPlain, contract.DelayMS.Reason(s))
		return
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return // the client left; nobody to answer
	}
	replyBytes(w, http.StatusOK, contract.TextPlain, contract.AppendDelayBody(nil, ms))
}

func statusHandler(w http.ResponseWriter, r *http.Request) {
	s := r.PathValue("code")
	code, ok := contract.Parse(contract.StatusCode, s)
	if !ok {
		reply(w, http.StatusBadRequest, contract.TextPlain, contract.StatusCode.Reason(s))
		return
	}
	if !contract.StatusHasFraming(code) {
		w.WriteHeader(code)
		return
	}
	replyBytes(w, code, contract.TextPlain, contract.AppendStatusBody(nil, code))
}

// echoHandler reads the whole body before answering: a client that sends
// its whole request before reading (most simple clients) would deadlock
// against a streaming echo once both socket buffers fill.
func echoHandler(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.ContentLength < 0:
		w.Header().Set("Connection", "close")
		reply(w, http.StatusLengthRequired, contract.TextPlain, contract.LengthRequiredBody)
		return
	case r.ContentLength > contract.MaxEchoBytes:
		w.Header().Set("Connection", "close")
		reply(w, http.StatusRequestEntityTooLarge, contract.TextPlain, contract.TooLargeBody)
		return
	}
	body := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, body); err != nil {
		return // the client left mid-body; nobody to answer
	}
	ctype := r.Header.Get("Content-Type")
	if ctype == "" {
		ctype = contract.OctetStream
	}
	replyBytes(w, http.StatusOK, ctype, body)
}

func reply(w http.ResponseWriter, code int, ctype, body string) {
	setFraming(w, ctype, len(body))
	w.WriteHeader(code)
	io.WriteString(w, body) // a write error means the client left
}

func replyBytes(w http.ResponseWriter, code int, ctype string, body []byte) {
	setFraming(w, ctype, len(body))
	w.WriteHeader(code)
	w.Write(body) // a write error means the client left
}

// setFraming sets the headers directly: Header().Set canonicalizes the key
// on every call, which shows in a profile at 100k requests/s.
func setFraming(w http.ResponseWriter, ctype string, n int) {
	h := w.Header()
	h["Content-Type"] = []string{ctype}
	h["Content-Length"] = []string{strconv.Itoa(n)}
}
