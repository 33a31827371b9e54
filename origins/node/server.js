'use strict';
// The "node" origin of proxybench: the contract of origins/README.md on
// Node's stdlib http module only (Node 18 and 20, no npm dependencies).
// The rules mirror origins/internal/contract (Go); origins/contract_test.go
// holds all four origins to the same bytes.

const http = require('node:http');

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const MAX_BYTES = 16 << 20;
const MAX_DELAY_MS = 60000;
const MAX_ECHO_BYTES = 16 << 20;
const IDLE_TIMEOUT_MS = 300000; // above every proxy's upstream idle timeout
const TEXT = 'text/plain; charset=utf-8';
const OCTETS = 'application/octet-stream';
const ROOT_BODY = 'proxybench origin ok\n';
const TOO_LARGE = `body too large: want at most ${MAX_ECHO_BYTES} bytes\n`;
const LENGTH_REQUIRED = 'length required: send the body with Content-Length\n';

const PARAMS = {
  bytes: { name: 'n', min: 0, max: MAX_BYTES },
  delay: { name: 'ms', min: 0, max: MAX_DELAY_MS },
  status: { name: 'code', min: 200, max: 599 },
};

// Every /bytes answer is a slice of this one buffer: no generation per request.
const PATTERN = Buffer.alloc(MAX_BYTES, ALPHABET, 'latin1');

function config(env) {
  const name = env.ORIGIN_NAME || 'node';
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) {
    throw new Error(`ORIGIN_NAME ${JSON.stringify(name)}: want 1..64 characters of [A-Za-z0-9._-]`);
  }
  const portText = env.PORT || '9101';
  const port = Number(portText);
  if (!/^[0-9]{1,5}$/.test(portText) || port > 65535) {
    throw new Error(`PORT ${JSON.stringify(portText)}: want a port number 0..65535`);
  }
  return { name, port, host: env.LISTEN_ADDR || '127.0.0.1' };
}

// parse accepts canonical decimals only (no sign, no leading zeros, at most
// 10 digits) within the parameter's range; null otherwise.
function parse(p, s) {
  if (!/^(0|[1-9][0-9]{0,9})$/.test(s)) return null;
  const v = Number(s);
  return v >= p.min && v <= p.max ? v : null;
}

// sanitize cuts to 32 bytes and replaces anything outside printable ASCII,
// '"' and '\' by '?', byte for byte like the Go and Python origins.
function sanitize(s) {
  let out = '';
  const n = Math.min(s.length, 32);
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    out += c < 0x21 || c > 0x7e || c === 0x22 || c === 0x5c ? '?' : s[i];
  }
  return s.length > 32 ? out + '...' : out;
}

function reason(p, s) {
  return `bad ${p.name} "${sanitize(s)}": want an integer ${p.min}..${p.max}\n`;
}

// cleanPath: starts with '/', no '%', no empty or dot segment ("/" aside).
function cleanPath(p) {
  if (p === '/') return true;
  if (p[0] !== '/' || p.includes('%')) return false;
  return p.slice(1).split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..');
}

const hasBody = (code) => code !== 204 && code !== 205 && code !== 304;
const hasFraming = (code) => code !== 204 && code !== 304;

function reply(res, code, ctype, body, extra) {
  const headers = extra || {};
  if (hasFraming(code)) {
    headers['Content-Type'] = ctype;
    headers['Content-Length'] = hasBody(code) ? Buffer.byteLength(body) : 0;
  }
  res.writeHead(code, headers);
  // Node drops the body of HEAD answers itself and keeps Content-Length.
  res.end(hasBody(code) ? body : undefined);
}

const notFound = (res) => reply(res, 404, TEXT, 'not found\n');
const notAllowed = (res, allow) => reply(res, 405, TEXT, 'method not allowed\n', { Allow: allow });

function echo(req, res) {
  if (req.headers['transfer-encoding'] !== undefined) {
    reply(res, 411, TEXT, LENGTH_REQUIRED, { Connection: 'close' });
    return;
  }
  const n = Number(req.headers['content-length'] || '0');
  if (n > MAX_ECHO_BYTES) {
    reply(res, 413, TEXT, TOO_LARGE, { Connection: 'close' });
    return;
  }
  // The whole body is read before answering, like every origin: a client
  // that writes all before it reads cannot deadlock against us.
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    reply(res, 200, req.headers['content-type'] || OCTETS, Buffer.concat(chunks));
  });
}

function handle(req, res) {
  const q = req.url.indexOf('?');
  const path = q < 0 ? req.url : req.url.slice(0, q);
  if (!cleanPath(path)) return notFound(res);
  const getLike = req.method === 'GET' || req.method === 'HEAD';
  switch (path) {
    case '/':
      return getLike ? reply(res, 200, TEXT, ROOT_BODY) : notAllowed(res, 'GET, HEAD');
    case '/healthz':
      return getLike ? reply(res, 200, TEXT, 'ok\n') : notAllowed(res, 'GET, HEAD');
    case '/echo':
      return req.method === 'POST' ? echo(req, res) : notAllowed(res, 'POST');
  }
  const m = /^\/(bytes|delay|status)\/([^/]+)$/.exec(path);
  if (m === null) return notFound(res);
  if (!getLike) return notAllowed(res, 'GET, HEAD');
  const [, kind, raw] = m;
  const p = PARAMS[kind];
  const v = parse(p, raw);
  if (v === null) return reply(res, 400, TEXT, reason(p, raw));
  switch (kind) {
    case 'bytes':
      return reply(res, 200, OCTETS, PATTERN.subarray(0, v));
    case 'delay': {
      // setTimeout counts from the event loop's cached time, which can be
      // a millisecond older than this request: it fired 49.96 ms after a
      // /delay/50 was sent. Re-arm until the monotonic clock has passed.
      const due = process.hrtime.bigint() + BigInt(v) * 1000000n;
      let t;
      const wait = () => {
        const left = Number(due - process.hrtime.bigint()) / 1e6;
        if (left > 0) {
          t = setTimeout(wait, Math.ceil(left));
          return;
        }
        reply(res, 200, TEXT, `delayed ${v} ms\n`);
      };
      t = setTimeout(wait, v);
      res.on('close', () => clearTimeout(t)); // the client left: drop the timer
      return undefined;
    }
    default:
      return reply(res, v, TEXT, `status ${v}\n`);
  }
}

function main() {
  let cfg;
  try {
    cfg = config(process.env);
  } catch (err) {
    process.stderr.write(`origin node: bad config: ${err.message}\n`);
    return 2;
  }
  const serve = (req, res) => {
    res.setHeader('X-Origin', cfg.name);
    try {
      handle(req, res);
    } catch (err) {
      // A bug must not take the origin down; answer and keep serving.
      process.stderr.write(`origin node: ${err.stack}\n`);
      if (!res.headersSent) reply(res, 500, TEXT, 'internal error\n');
    }
  };
  const server = http.createServer(serve);
  // Expect: 100-continue. Node would send "100 Continue" to every request
  // that asks; send it only to an echo that will read its body. Any other
  // such request is answered without its body, so the connection closes.
  server.on('checkContinue', (req, res) => {
    const path = req.url.split('?', 1)[0];
    const n = Number(req.headers['content-length'] || '0');
    if (req.method === 'POST' && path === '/echo' && req.headers['transfer-encoding'] === undefined && n <= MAX_ECHO_BYTES) {
      res.writeContinue();
    } else {
      res.setHeader('Connection', 'close');
    }
    serve(req, res);
  });
  server.keepAliveTimeout = IDLE_TIMEOUT_MS;
  server.headersTimeout = 10000;
  server.requestTimeout = 0; // /delay and big echoes bound themselves
  // Malformed requests never reach the handler: answer them in the contract's
  // shape (X-Origin, one-line body) instead of Node's bare 400.
  const refused = new WeakSet(); // sockets already answered: a second error only closes
  server.on('clientError', (err, socket) => {
    if (!socket.writable || err.code === 'ECONNRESET' || refused.has(socket)) {
      socket.destroy();
      return;
    }
    refused.add(socket);
    let status = '400 Bad Request';
    let body = 'bad request\n';
    if (err.code === 'HPE_HEADER_OVERFLOW') {
      status = '431 Request Header Fields Too Large';
      body = 'request header fields too large\n';
    } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      status = '408 Request Timeout';
      body = 'request timeout\n';
    }
    // Stop reading first: more bytes would make a second parser error, which
    // Node reports as a warning about an undestroyed socket.
    socket.pause();
    socket.end(`HTTP/1.1 ${status}\r\nX-Origin: ${cfg.name}\r\nContent-Type: ${TEXT}\r\n` +
      `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`, () => socket.destroy());
  });
  server.on('error', (err) => {
    process.stderr.write(`origin node: listen: ${err.message}\n`);
    process.exit(1);
  });
  server.listen({ port: cfg.port, host: cfg.host, backlog: 4096 }, () => {
    const a = server.address();
    process.stderr.write(`origin node: name=${cfg.name} listening on ${a.address}:${a.port}\n`);
  });
  const stop = () => {
    server.close();
    server.closeAllConnections?.();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  return 0;
}

const code = main();
if (code !== 0) process.exit(code);
