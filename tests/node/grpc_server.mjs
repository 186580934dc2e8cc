// SPDX-License-Identifier: Apache-2.0
// A real OTLP/gRPC profiles collector for pprofgate's tests: @grpc/grpc-js serving
// ProfilesService/Export, decoding with the protobufjs code generated from upstream
// opentelemetry-proto (shipped in @coralogix/opentelemetry-profiling). It counts what
// arrives, keeps the decoded requests, and injects faults on demand.
//
// Usage: node grpc_server.mjs [--port N] [--control-port N] [--tls-cert F --tls-key F
//        [--tls-ca F --mtls]] [--start-delay-ms N] [--mode M] [--fail-first N]
//        [--max-conn-age-ms N] (GOAWAY each connection after N ms)
//        [--raw-http-status N] (plain HTTP/2 answering :status N, no gRPC)
//        [--reject-containing STR] (INVALID_ARGUMENT for any request whose bytes contain STR)
//        [--discard] (benchmarks: count requests and bytes without decoding them)
//        [--strict-utf8] (a string field with invalid UTF-8 fails the call with INTERNAL,
//        as Go's protobuf does; stats.invalid_utf8 counts such fields either way)
// Prints one JSON line {"grpc_port":..,"control_port":..} on stdout when listening.
// Control endpoint (HTTP/1.1 on 127.0.0.1:control_port):
//   GET  /stats      counters, encodings seen, sample totals, duplicate count
//   GET  /requests   every accepted request as JSON (int64 as strings)
//   POST /mode       JSON {mode, fail_first, stall_ms, delay_ms, retry_delay_ms}
//   POST /stop       close the gRPC listener (connections cut)   POST /start  re-open it
//   POST /reset      clear counters and stored requests
// Modes: ok | unavailable (first fail_first calls, then ok) | stall (answer after stall_ms)
//        | invalid (INVALID_ARGUMENT) | exhausted (RESOURCE_EXHAUSTED, no RetryInfo)
//        | exhausted_retryinfo (RESOURCE_EXHAUSTED + RetryInfo retry_delay_ms, first
//        fail_first calls) | cut (kill connections on the first fail_first calls)
//        | slow (answer ok after delay_ms) | partial (ok with partial_success rejected=1)
import { createRequire } from 'node:module';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const grpc = require(path.join(here, 'node_modules/@grpc/grpc-js'));
const otlp = require(path.join(here,
    'node_modules/@coralogix/opentelemetry-profiling/dist/generated/otlp.js'));
const protobuf = require(path.join(here, 'node_modules/protobufjs/minimal'));
const serverCalls = require(path.join(here,
    'node_modules/@grpc/grpc-js/build/src/server-interceptors.js'));

const pb = otlp.opentelemetry.proto;
const Req = pb.collector.profiles.v1development.ExportProfilesServiceRequest;
const Resp = pb.collector.profiles.v1development.ExportProfilesServiceResponse;
const METHOD = '/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export';

function arg(name, def) {
  const i = process.argv.indexOf(name);
  if (i >= 0 && i + 1 < process.argv.length) return process.argv[i + 1];
  const env = process.env['PG_GRPC_' + name.replace(/^--/, '').replace(/-/g, '_').toUpperCase()];
  return env !== undefined ? env : def;
}
const flag = (name) => process.argv.includes(name);

const cfg = {
  mode: arg('--mode', 'ok'),
  fail_first: Number(arg('--fail-first', '0')),
  stall_ms: Number(arg('--stall-ms', '30000')),
  delay_ms: Number(arg('--delay-ms', '0')),
  retry_delay_ms: Number(arg('--retry-delay-ms', '200')),
};

let stats;
let stored;
let digests;
function reset() {
  stats = { calls: 0, ok: 0, failed: 0, samples: 0, profiles: 0, requests: 0, duplicates: 0,
            bytes: 0, max_bytes: 0, wire_bytes: 0, encodings: {}, authorization: [], headers: {},
            mode_hits: 0, invalid_utf8: 0, invalid_utf8_requests: 0 };
  stored = [];
  digests = new Set();
}
reset();

// The gzip check: grpc-js strips grpc-encoding from metadata, so record the encoding of
// each message where grpc-js decompresses it (test-only hook on its own prototype).
const proto = serverCalls.BaseServerInterceptingCall.prototype;
const origDecompress = proto.decompressMessage;
proto.decompressMessage = function (message, encoding) {
  stats.encodings[encoding] = (stats.encodings[encoding] || 0) + 1;
  stats.wire_bytes += message.length;
  return origDecompress.call(this, message, encoding);
};

// Strict UTF-8, as Go's protobuf checks proto3 `string` fields: protobufjs
// would silently decode bad bytes to U+FFFD, so its string readers are
// wrapped to count every string field that is not valid UTF-8 (and, with
// --strict-utf8, to fail the call with INTERNAL as the collector does).
const strictDecoder = new TextDecoder('utf-8', { fatal: true });
let badStrings = 0;
for (const R of [protobuf.Reader, protobuf.BufferReader]) {
  if (!R || !R.prototype.string) continue;
  const orig = R.prototype.string;
  R.prototype.string = function () {
    const start = this.pos;
    const out = orig.call(this);
    const bytes = this.buf.subarray(start, this.pos);
    // Skip the length prefix (a varint) before checking the string bytes.
    let i = 0;
    while (i < bytes.length && (bytes[i] & 0x80)) i++;
    try { strictDecoder.decode(bytes.subarray(i + 1)); } catch { badStrings++; }
    return out;
  };
}

function countSamples(req) {
  let samples = 0, profiles = 0;
  for (const rp of req.resourceProfiles || []) {
    for (const sp of rp.scopeProfiles || []) {
      for (const p of sp.profiles || []) {
        profiles++;
        samples += (p.samples || []).length;
      }
    }
  }
  return { samples, profiles };
}

// JSON view of a decoded message: int64 Longs as decimal strings, bytes as hex.
function plain(v) {
  if (v === null || v === undefined) return v;
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return Buffer.from(v).toString('hex');
  if (typeof v === 'object' && typeof v.low === 'number' && typeof v.high === 'number' &&
      typeof v.unsigned === 'boolean') {
    return protobuf.util.Long.fromBits(v.low, v.high, v.unsigned).toString();
  }
  if (Array.isArray(v)) return v.map(plain);
  if (typeof v === 'object') {
    const o = {};
    for (const k of Object.keys(v)) o[k] = plain(v[k]);
    return o;
  }
  return v;
}

// google.rpc.Status{code, message, details:[Any{type_url, RetryInfo{Duration}}]}.
function retryInfoStatus(code, msg, delayMs) {
  const dur = protobuf.Writer.create()
    .uint32(8).int64(Math.floor(delayMs / 1000))
    .uint32(16).int32((delayMs % 1000) * 1e6).finish();
  const ri = protobuf.Writer.create().uint32(10).bytes(dur).finish();
  const any = protobuf.Writer.create()
    .uint32(10).string('type.googleapis.com/google.rpc.RetryInfo')
    .uint32(18).bytes(ri).finish();
  return Buffer.from(protobuf.Writer.create()
    .uint32(8).int32(code).uint32(18).string(msg).uint32(26).bytes(any).finish());
}

let grpcServer = null;
let grpcPort = Number(arg('--port', '0'));

function accept(raw, req, md) {
  const digest = crypto.createHash('sha256').update(raw).digest('hex');
  if (digests.has(digest)) stats.duplicates++;
  digests.add(digest);
  const c = countSamples(req);
  stats.ok++;
  stats.requests++;
  stats.samples += c.samples;
  stats.profiles += c.profiles;
  stats.bytes += raw.length;
  stats.max_bytes = Math.max(stats.max_bytes, raw.length);
  const auth = md.get('authorization');
  if (auth.length) stats.authorization.push(String(auth[0]));
  for (const [k, v] of Object.entries(md.getMap())) {
    if (k !== 'authorization' && k !== 'user-agent') stats.headers[k] = String(v);
  }
  if (process.env.PG_GRPC_STORE !== '0') stored.push(plain(req));
}

function handler(call, callback) {
  const n = ++stats.calls;
  const raw = call.request.raw;
  const req = call.request.msg;
  const md = call.metadata;
  const early = n <= cfg.fail_first;
  const poison = arg('--reject-containing', '');
  if (poison && raw.includes(Buffer.from(poison))) {
    // One bad request inside a merged export: rejected for good, as a
    // collector rejects a request it cannot take.
    stats.failed++;
    stats.rejected_poison = (stats.rejected_poison || 0) + 1;
    callback({ code: grpc.status.INVALID_ARGUMENT, details: 'test: poisoned request' });
    return;
  }
  if (call.request.bad_utf8 > 0) {
    stats.invalid_utf8 += call.request.bad_utf8;
    stats.invalid_utf8_requests++;
    if (flag('--strict-utf8') || process.env.PG_GRPC_STRICT_UTF8 === '1') {
      stats.failed++;
      callback({ code: grpc.status.INTERNAL,
                 details: 'grpc: error unmarshalling request: string field contains invalid UTF-8' });
      return;
    }
  }
  const reply = () => {
    if (cfg.mode === 'partial') {
      accept(raw, req, md);
      callback(null, { partialSuccess: { rejectedProfiles: 1, errorMessage: 'one rejected' } });
      return;
    }
    accept(raw, req, md);
    callback(null, { partialSuccess: {} });
  };
  const fail = (code, details, metadata) => {
    stats.failed++;
    stats.mode_hits++;
    callback({ code, details, metadata: metadata || new grpc.Metadata() });
  };
  switch (cfg.mode) {
    case 'unavailable':
      if (early) return fail(grpc.status.UNAVAILABLE, 'test: unavailable, try again');
      return reply();
    case 'invalid':
      return fail(grpc.status.INVALID_ARGUMENT, 'test: invalid argument % 100');
    case 'exhausted':
      return fail(grpc.status.RESOURCE_EXHAUSTED, 'test: resource exhausted');
    case 'exhausted_retryinfo':
      if (early) {
        const m = new grpc.Metadata();
        m.set('grpc-status-details-bin', retryInfoStatus(8, 'slow down', cfg.retry_delay_ms));
        return fail(grpc.status.RESOURCE_EXHAUSTED, 'test: slow down', m);
      }
      return reply();
    case 'stall':
      if (early || cfg.fail_first === 0) {
        stats.mode_hits++;
        setTimeout(() => { try { callback(null, {}); } catch { /* cancelled */ } },
                   cfg.stall_ms);
        return;
      }
      return reply();
    case 'cut':
      if (early) {
        stats.mode_hits++;
        stats.failed++;
        // Kill every connection mid-call, then listen again on the same port.
        grpcServer.forceShutdown();
        grpcServer = null;
        setTimeout(() => startGrpc().catch((e) => console.error(e)), 100);
        return;
      }
      return reply();
    case 'slow':
      setTimeout(reply, cfg.delay_ms);
      return;
    default:
      return reply();
  }
}

const service = {
  Export: {
    path: METHOD,
    requestStream: false,
    responseStream: false,
    requestSerialize: (m) => Req.encode(m).finish(),
    requestDeserialize: (buf) => {
      if (flag('--discard')) return { raw: Buffer.from(buf), msg: {}, bad_utf8: 0 };
      badStrings = 0;
      const msg = Req.decode(buf);
      return { raw: Buffer.from(buf), msg, bad_utf8: badStrings };
    },
    responseSerialize: (m) => Buffer.from(Resp.encode(m).finish()),
    responseDeserialize: (buf) => Resp.decode(buf),
  },
};

function credentials() {
  const cert = arg('--tls-cert', '');
  if (!cert) return grpc.ServerCredentials.createInsecure();
  const key = fs.readFileSync(arg('--tls-key', ''));
  const ca = arg('--tls-ca', '');
  return grpc.ServerCredentials.createSsl(ca ? fs.readFileSync(ca) : null,
    [{ cert_chain: fs.readFileSync(cert), private_key: key }], flag('--mtls'));
}

function startGrpc() {
  return new Promise((resolve, reject) => {
    if (grpcServer) return resolve(grpcPort);
    const opts = { 'grpc.max_receive_message_length': 64 << 20 };
    const age = Number(arg('--max-conn-age-ms', '0'));
    if (age > 0) {
      // Connections older than this get a GOAWAY (graceful drain), as behind load balancers.
      opts['grpc.max_connection_age_ms'] = age;
      opts['grpc.max_connection_age_grace_ms'] = 5000;
    }
    const s = new grpc.Server(opts);
    s.addService(service, { Export: handler });
    s.bindAsync(`127.0.0.1:${grpcPort}`, credentials(), (err, port) => {
      if (err) return reject(err);
      grpcPort = port;
      grpcServer = s;
      resolve(port);
    });
  });
}

function stopGrpc() {
  if (grpcServer) {
    grpcServer.forceShutdown();
    grpcServer = null;
  }
}

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

function body(req) {
  return new Promise((resolve) => {
    let b = '';
    req.on('data', (d) => { b += d; });
    req.on('end', () => resolve(b));
  });
}

const control = http.createServer(async (req, res) => {
  const send = (code, obj) => {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(obj));
  };
  try {
    if (req.method === 'GET' && req.url === '/stats') return send(200, { ...stats, ...cfg });
    if (req.method === 'GET' && req.url === '/requests') return send(200, stored);
    if (req.method === 'POST' && req.url === '/mode') {
      const b = JSON.parse((await body(req)) || '{}');
      Object.assign(cfg, b);
      stats.calls = 0;
      return send(200, cfg);
    }
    if (req.method === 'POST' && req.url === '/reset') { reset(); return send(200, {}); }
    if (req.method === 'POST' && req.url === '/stop') { stopGrpc(); return send(200, {}); }
    if (req.method === 'POST' && req.url === '/start') {
      return send(200, { grpc_port: await startGrpc() });
    }
    send(404, { error: 'no such endpoint' });
  } catch (e) {
    send(500, { error: String(e) });
  }
});

// --raw-http-status N: not gRPC at all, a bare HTTP/2 server answering every request with
// :status N and no grpc-status (a proxy or load balancer in front of a collector).
const rawStatus = Number(arg('--raw-http-status', '0'));
if (rawStatus > 0) {
  const http2 = require('node:http2');
  const h2 = http2.createServer();
  h2.on('stream', (stream) => {
    stats.calls++;
    stats.failed++;
    stream.on('data', () => {});
    stream.on('end', () => {
      stream.respond({ ':status': rawStatus, 'content-type': 'text/plain' });
      stream.end('not a grpc server');
    });
  });
  await new Promise((resolve) => h2.listen(0, '127.0.0.1', resolve));
  grpcPort = h2.address().port;
  grpcServer = { forceShutdown: () => h2.close() };
}
const delay = Number(arg('--start-delay-ms', '0'));
if (grpcPort === 0) grpcPort = await freePort();
if (rawStatus > 0) {
  // already listening
} else if (delay > 0) {
  setTimeout(() => startGrpc().catch((e) => { console.error(e); process.exit(1); }), delay);
} else {
  await startGrpc();
}
control.listen(Number(arg('--control-port', '0')), '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ grpc_port: grpcPort,
                                        control_port: control.address().port }) + '\n');
});
const quit = () => { stopGrpc(); control.close(); process.exit(0); };
process.on('SIGTERM', quit);
// Never outlive the test that started us (a crashed test cannot send SIGTERM).
const parent = process.ppid;
setInterval(() => { if (process.ppid !== parent) quit(); }, 500).unref();
process.on('SIGINT', quit);
