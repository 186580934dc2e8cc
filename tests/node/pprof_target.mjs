// SPDX-License-Identifier: Apache-2.0
// A Node program serving @datadog/pprof profiles the way Node services do:
// GET /debug/pprof/heap (sampled heap: inuse_objects, inuse_space) and
// GET /debug/pprof/profile?seconds=N (wall time). Gzip'd pprof, sent with a
// Content-Type that is not application/octet-stream. Prints its port.
import http from 'node:http';
import { heap, time, encode } from '@datadog/pprof';

heap.start(64 * 1024, 64);
const retained = [];
for (let i = 0; i < 5000; i++) retained.push({ id: i, data: 'x'.repeat(200 + (i % 50)) });

let busy = false;
function spin() {
  let s = 0;
  for (let i = 0; i < 2e5; i++) s += Math.sqrt(i);
  setTimeout(spin, 1);
  return s;
}
spin();

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://x');
  try {
    if (url.pathname === '/debug/pprof/heap') {
      const buf = await encode(heap.profile());
      res.writeHead(200, { 'Content-Type': 'application/x-protobuf' });
      res.end(buf);
    } else if (url.pathname === '/debug/pprof/profile') {
      if (busy) {
        res.writeHead(500);
        res.end('profiling already in use');
        return;
      }
      busy = true;
      const seconds = Number(url.searchParams.get('seconds') || '1');
      const prof = await time.profile({ durationMillis: seconds * 1000 });
      busy = false;
      const buf = await encode(prof);
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end(buf);
    } else {
      res.writeHead(404);
      res.end('not found');
    }
  } catch (e) {
    busy = false;
    res.writeHead(500);
    res.end(String(e));
  }
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening on ${server.address().port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
void retained;
