// The floor of the service benchmark (cases-service.mjs): a bare node:http server with the gateway's route shape
// that makes each message durable the cheapest honest way — append one JSON line to a file, fsync, then answer
// 201. Group commit, the same idea as the gateway's: one cycle at a time writes everything queued in one append
// and one fsync; requests that arrive while it runs share the next cycle. The fsync is asynchronous, so requests
// keep being read while it runs. It keeps no idempotency index (the key is written with the line).
//   node service-floor-child.mjs <file>      prints its URL (http://127.0.0.1:<port>) on stdout once listening
// Exits 0 on SIGTERM after the cycle in flight; any write or fsync failure exits 1 (no silent loss).
import * as fs from 'node:fs';
import * as http from 'node:http';

const file = process.argv[2];
if (file === undefined) {
  process.stderr.write('usage: node service-floor-child.mjs <file>\n');
  process.exit(2);
}
const fh = await fs.promises.open(file, 'a', 0o600);
let queue = [];
let running = false;
let cycles = 0;
let acked = 0;

async function cycle() {
  running = true;
  try {
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      await fh.write(batch.map((j) => j.line).join(''));
      await fh.sync();
      cycles++;
      acked += batch.length;
      for (const j of batch) j.ack();
    }
  } catch (err) {
    process.stderr.write(`floor: append/fsync failed: ${err.code ?? ''} ${err.message}\n`);
    process.exit(1);
  } finally {
    running = false;
  }
}

const ROUTE = /^\/v1\/sessions\/([^/]+)\/messages$/;
const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const m = req.method === 'POST' ? ROUTE.exec(req.url ?? '') : null;
  if (m === null) {
    if (req.url === '/stats') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ cycles, acked }));
      return;
    }
    req.resume();
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"ENOT_FOUND"}}');
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let text;
    try {
      text = JSON.parse(Buffer.concat(chunks).toString('utf8')).text;
    } catch {
      text = undefined;
    }
    if (typeof text !== 'string' || text === '') {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"code":"EINVALID_BODY"}}');
      return;
    }
    const session = decodeURIComponent(m[1]);
    const key = req.headers['idempotency-key'];
    const line = `${JSON.stringify({ session, key, text, ts: Date.now() / 1000 })}\n`;
    queue.push({
      line,
      ack: () => res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, session, idempotencyKey: key })),
    });
    if (!running) void cycle();
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${server.address().port}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  const done = () => (running || queue.length > 0 ? setTimeout(done, 5) : fh.close().then(() => process.exit(0)));
  done();
});
