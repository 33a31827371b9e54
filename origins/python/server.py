#!/usr/bin/env python3
"""The "python" origin of proxybench.

The contract of origins/README.md on the Python 3.11 standard library only:
http.server's ThreadingHTTPServer speaking HTTP/1.1, so keep-alive works.
One thread per connection: /delay sleeps in its thread, which holds a few
thousand concurrent connections (bounded by threads and file descriptors,
see origins/README.md). The rules mirror origins/internal/contract (Go);
origins/contract_test.go holds all four origins to the same bytes.
"""

import http.server
import os
import re
import signal
import socket
import sys
import time

ALPHABET = b"abcdefghijklmnopqrstuvwxyz0123456789"
MAX_BYTES = 16 << 20
MAX_DELAY_MS = 60000
MAX_ECHO_BYTES = 16 << 20
MAX_DISCARD = 256 << 10
IDLE_TIMEOUT_S = 300  # above every proxy's upstream idle timeout
TEXT = "text/plain; charset=utf-8"
OCTETS = "application/octet-stream"
ROOT_BODY = b"proxybench origin ok\n"
TOO_LARGE = f"body too large: want at most {MAX_ECHO_BYTES} bytes\n".encode()
LENGTH_REQUIRED = b"length required: send the body with Content-Length\n"
ALLOW_GET = "GET, HEAD"

# (name, min, max) per parameterised route.
PARAMS = {
    "bytes": ("n", 0, MAX_BYTES),
    "delay": ("ms", 0, MAX_DELAY_MS),
    "status": ("code", 200, 599),
}

# Every /bytes answer is a slice of this one buffer: no generation per request.
PATTERN = memoryview((ALPHABET * (MAX_BYTES // len(ALPHABET) + 1))[:MAX_BYTES])

# Canonical decimals only: int() would also take "+5", " 5", "1_0" and
# non-ASCII digits, which the other origins refuse.
CANONICAL = re.compile(r"(0|[1-9][0-9]{0,9})\Z", re.ASCII)
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
PARAM_ROUTE = re.compile(r"/(bytes|delay|status)/([^/]+)\Z")


def parse(param, s):
    """Value of s for param, or None when not a canonical in-range integer."""
    _, lo, hi = param
    if not CANONICAL.match(s):
        return None
    v = int(s)
    return v if lo <= v <= hi else None


def sanitize(s):
    """Cut to 32 bytes; bytes outside printable ASCII, '"' and '\\' become '?'."""
    out = "".join("?" if c < "!" or c > "~" or c in '"\\' else c for c in s[:32])
    return out + "..." if len(s) > 32 else out


def reason(param, s):
    name, lo, hi = param
    return f'bad {name} "{sanitize(s)}": want an integer {lo}..{hi}\n'.encode()


def clean_path(p):
    """Starts with '/', no '%', no empty or dot segment ("/" aside)."""
    if p == "/":
        return True
    if not p.startswith("/") or "%" in p:
        return False
    return all(seg not in ("", ".", "..") for seg in p[1:].split("/"))


def has_body(code):
    return code not in (204, 205, 304)


def has_framing(code):
    return code not in (204, 304)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT_S  # idle keep-alive connections end, and their threads
    # Head and body go out in two writes; with Nagle on, the second waits
    # for the client's delayed ACK (40 ms) on every keep-alive answer.
    disable_nagle_algorithm = True
    origin_name = "python"

    # Every method goes through dispatch; BaseHTTPRequestHandler looks up
    # do_<METHOD> and would answer 501 for the ones not defined.
    def __getattr__(self, name):
        if name.startswith("do_"):
            return self.dispatch
        raise AttributeError(name)

    def log_message(self, format, *args):  # noqa: A002 - the base signature
        pass  # no per-request logging: it would cost more than the request

    def send_error(self, code, message=None, explain=None):
        """Refusals from http.server itself (bad request line, too long)
        in the contract's shape: X-Origin and a one-line body."""
        # Only the standard phrase: http.server's messages quote the raw
        # request line, unbounded.
        self.close_connection = True
        phrase = self.responses.get(code, ("error",))[0].lower()
        self.reply(code, TEXT, phrase.encode("ascii", "replace") + b"\n", close=True)

    def reply(self, code, ctype, body, allow=None, close=False):
        self.send_response(code)
        self.send_header("X-Origin", self.origin_name)
        if has_framing(code):
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body) if has_body(code) else 0))
        if allow:
            self.send_header("Allow", allow)
        if close:
            self.close_connection = True
            self.send_header("Connection", "close")
        elif self.request_version == "HTTP/1.0" and not self.close_connection:
            self.send_header("Connection", "keep-alive")
        self.end_headers()
        if self.command != "HEAD" and has_body(code) and body:
            self.wfile.write(body)

    def handle_expect_100(self):
        # http.server would send "100 Continue" to every request that asks,
        # before we know the answer; echo() sends it only when it will read.
        return True

    def expects_continue(self):
        return self.headers.get("Expect", "").strip().lower() == "100-continue"

    def skip_body(self):
        """Drop a body nobody asked for; False when closing is cheaper."""
        if self.headers.get("Transfer-Encoding") is not None:
            return False
        if self.expects_continue() and self.headers.get("Content-Length", "0").strip() != "0":
            return False  # the client sends nothing until told to
        n = self.content_length()
        if n is None or n > MAX_DISCARD:
            return False
        if n:
            self.rfile.read(n)
        return True

    def content_length(self):
        v = self.headers.get("Content-Length", "0").strip()
        return int(v) if v.isascii() and v.isdigit() and len(v) <= 18 else None

    def dispatch(self):
        # The target as sent: self.path has had "//" folded by http.server.
        words = self.requestline.split()
        target = words[1] if len(words) == 3 else self.path
        path = target.split("?", 1)[0]
        if not clean_path(path):
            return self.plain(404, b"not found\n")
        if path == "/echo":
            if self.command == "POST":
                return self.echo()
            return self.plain(405, b"method not allowed\n", allow="POST")
        get_like = self.command in ("GET", "HEAD")
        if path in ("/", "/healthz"):
            if not get_like:
                return self.plain(405, b"method not allowed\n", allow=ALLOW_GET)
            return self.plain(200, ROOT_BODY if path == "/" else b"ok\n")
        m = PARAM_ROUTE.match(path)
        if m is None:
            return self.plain(404, b"not found\n")
        if not get_like:
            return self.plain(405, b"method not allowed\n", allow=ALLOW_GET)
        kind, raw = m.group(1), m.group(2)
        param = PARAMS[kind]
        v = parse(param, raw)
        if v is None:
            return self.plain(400, reason(param, raw))
        if kind == "bytes":
            return self.plain(200, PATTERN[:v], ctype=OCTETS)
        if kind == "delay":
            time.sleep(v / 1000)
            return self.plain(200, f"delayed {v} ms\n".encode())
        return self.plain(v, f"status {v}\n".encode())

    def plain(self, code, body, ctype=TEXT, allow=None):
        close = not self.skip_body()
        self.reply(code, ctype, body, allow=allow, close=close)

    def echo(self):
        if self.headers.get("Transfer-Encoding") is not None:
            return self.reply(411, TEXT, LENGTH_REQUIRED, close=True)
        n = self.content_length()
        if n is None:
            return self.reply(400, TEXT, b"bad request: bad Content-Length\n", close=True)
        if n > MAX_ECHO_BYTES:
            return self.reply(413, TEXT, TOO_LARGE, close=True)
        ctype = self.headers.get("Content-Type") or OCTETS
        if CONTROL.search(ctype):
            # Echoed raw it would break our own answer; Go and Node refuse it
            # while parsing, so refuse it here too.
            return self.reply(400, TEXT, b"bad request: control byte in Content-Type\n", close=True)
        # Read it all before answering, like every origin (no deadlock with
        # clients that write all before they read).
        if n and self.expects_continue():
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = self.rfile.read(n) if n else b""
        if len(body) != n:
            self.close_connection = True
            return None  # the client left mid-body
        return self.reply(200, ctype, body)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 4096  # the default 5 drops SYNs under a burst of connections
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        # A client that vanished mid-answer is not news; anything else is a
        # bug worth its traceback (the server keeps serving either way).
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def config(env):
    name = env.get("ORIGIN_NAME") or "python"
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", name, re.ASCII):
        raise ValueError(f'ORIGIN_NAME "{name}": want 1..64 characters of [A-Za-z0-9._-]')
    port_text = env.get("PORT") or "9102"
    if not re.fullmatch(r"[0-9]{1,5}", port_text, re.ASCII) or int(port_text) > 65535:
        raise ValueError(f'PORT "{port_text}": want a port number 0..65535')
    return name, env.get("LISTEN_ADDR") or "127.0.0.1", int(port_text)


def main():
    try:
        name, host, port = config(os.environ)
    except ValueError as err:
        print(f"origin python: bad config: {err}", file=sys.stderr)
        return 2
    Handler.origin_name = name
    if ":" in host:
        Server.address_family = socket.AF_INET6
    server = Server((host, port), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"origin python: name={name} listening on {host}:{server.server_address[1]}",
          file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
