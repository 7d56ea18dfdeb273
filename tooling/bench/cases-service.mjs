// The gateway service end to end (group `service`): the real `hermes-gateway` bin in a child process on loopback.
//   G1 / G10 / G100: durable acks per second and ack latency at 1, 10 and 100 concurrent clients, against a floor
//     measured in the same run: a bare node:http server in its own process that appends each message to a file
//     and fsyncs with the same group commit (service-floor-child.mjs). Target: at least half the floor's acks/s.
//     Each client has its own keep-alive agent and posts sequentially (the next message once the previous one
//     is acknowledged) for a fixed time, over 16 sessions, every message with its own idempotency key. Samples
//     alternate the two sides. The rows carry the time per acknowledgement (ours ÷ floor ≤ 2 is the target: the
//     figure `pnpm bench:check` compares, lower is better) and the acks/s and p50/p99 latency of both sides.
//   G-rec-1k / G-rec-20k / G-rec-100k: from spawning the service over a spool of N payload files to /readyz 200,
//     and the count it recovered (one run each with --quick, and for 100k always).
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { seedSpool } from './cases-gateway.mjs';
import { median, quantile, side } from './harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = fileURLToPath(new URL('../../apps/hermes-gateway/dist/bin.js', import.meta.url));
const FLOOR = path.join(HERE, 'service-floor-child.mjs');
const SESSIONS = 16;
const TEXT = `a message of a typical chat length, ${'x'.repeat(160)}`;
// Turns never finish during the measurement (as in the gateway's load test): every commit counted is one of
// messages, as on the floor's side; a reply would be one more group-committed row per message.
const SLOW_TURNS = ['--turn-latency-ms', '600000'];

/** Spawns `args` with node; resolves once `urlOf(line)` finds a URL in a stdout/stderr line. Rejects on an early exit. */
function spawnService(args, { urlFrom, timeoutMs = 120_000 }) {
  const t0 = performance.now();
  const proc = spawn(process.execPath, args, { env: { ...process.env, HERMES_HOME: undefined, NODE_OPTIONS: undefined }, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '', lines: [] };
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const url = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${path.basename(args[0])}: no URL within ${timeoutMs} ms:\n${out.stderr}`)), timeoutMs);
    const onLine = (stream) => (line) => {
      out.lines.push({ stream, line, ms: performance.now() - t0 });
      const u = urlFrom(stream, line);
      if (u !== undefined) {
        clearTimeout(timer);
        resolve(u);
      }
    };
    lines(proc.stdout, (s) => (out.stdout += s), onLine('stdout'));
    lines(proc.stderr, (s) => (out.stderr += s), onLine('stderr'));
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`${path.basename(args[0])} exited (${code ?? signal}) before it gave its URL:\n${out.stderr}`));
    });
  });
  return { proc, t0, out, exited, url };
}

function lines(stream, raw, onLine) {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    raw(chunk);
    rest += chunk;
    const parts = rest.split('\n');
    rest = parts.pop();
    for (const l of parts) onLine(l);
  });
}

function jsonLine(line) {
  if (!line.startsWith('{')) return undefined;
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

/** One request over `agent`; resolves with the status and the body text (read to the end, so the socket is reused). */
function request(url, { agent, method = 'GET', pathname, body, headers = {} }) {
  return new Promise((resolve, reject) => {
    const u = new URL(pathname, url);
    const req = http.request(
      { agent, host: u.hostname, port: u.port, path: u.pathname + u.search, method, headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function waitReady(url, agent, deadlineMs = 600_000) {
  const end = performance.now() + deadlineMs;
  for (;;) {
    const r = await request(url, { agent, pathname: '/readyz' });
    if (r.status === 200) return performance.now();
    if (r.status !== 503) throw new Error(`/readyz answered ${r.status}: ${r.text}`);
    if (performance.now() > end) throw new Error(`/readyz still 503 after ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function metricsOf(url) {
  const r = await request(url, { pathname: '/metrics' });
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}`);
  const get = (name) => {
    const line = r.text.split('\n').find((l) => l.startsWith(`${name} `));
    if (line === undefined) throw new Error(`no ${name} in /metrics`);
    return Number(line.split(' ')[1]);
  };
  return {
    commits: get('hermes_gateway_commits_total'),
    committed: get('hermes_gateway_committed_messages_total'),
    spooled: get('hermes_gateway_spooled_messages_total'),
    recovered: get('hermes_gateway_recovered_total'),
  };
}

async function stop(svc, expected, what) {
  svc.proc.kill('SIGTERM');
  const { code, signal } = await svc.exited;
  if (code !== expected) throw new Error(`${what} exited ${code ?? signal} after SIGTERM (expected ${expected}):\n${svc.out.stderr.slice(-2000)}`);
}

/**
 * `clients` clients, each with its own keep-alive agent, post sequentially until `durationMs` has passed.
 * Every answer must be a durable acknowledgement (201, or 202 spooled); anything else throws.
 */
async function drive(url, { clients, durationMs, tag }) {
  const agents = Array.from({ length: clients }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const latencies = [];
  let spooled = 0;
  const t0 = performance.now();
  const end = t0 + durationMs;
  try {
    await Promise.all(
      agents.map(async (agent, c) => {
        for (let j = 0; performance.now() < end; j++) {
          const key = `agent:main:bench:s${(c + j) % SESSIONS}`;
          const s = performance.now();
          const r = await request(url, {
            agent,
            method: 'POST',
            pathname: `/v1/sessions/${encodeURIComponent(key)}/messages`,
            headers: { 'idempotency-key': `${tag}-${c}-${j}` },
            body: JSON.stringify({ text: `${TEXT} ${tag} ${c} ${j}` }),
          });
          if (r.status === 202) spooled++;
          else if (r.status !== 201) throw new Error(`${tag}: client ${c} message ${j} answered ${r.status}: ${r.text}`);
          latencies.push(performance.now() - s);
        }
      }),
    );
  } finally {
    for (const a of agents) a.destroy();
  }
  const seconds = (performance.now() - t0) / 1000;
  return { acks: latencies.length, seconds, acksPerS: latencies.length / seconds, latencies, spooled };
}

const fmtInt = (n) => Math.round(n).toLocaleString('en-US');

async function throughputRow(workRoot, clients, { samples, durationMs }) {
  const home = path.join(workRoot, `tp-${clients}`, 'home');
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  const floorFile = path.join(workRoot, `tp-${clients}`, 'floor.jsonl');
  const ours = spawnService([BIN, '--home', home, '--port', '0', '--print-url', '--log-level', 'warn', ...SLOW_TURNS], {
    urlFrom: (stream, line) => (stream === 'stdout' && line.startsWith('http') ? line.trim() : undefined),
  });
  const floor = spawnService([FLOOR, floorFile], { urlFrom: (stream, line) => (stream === 'stdout' && line.startsWith('http') ? line.trim() : undefined) });
  try {
    const [oursUrl, floorUrl] = await Promise.all([ours.url, floor.url]);
    await waitReady(oursUrl, undefined);
    const sides = [
      { name: 'hermes-gateway (fastify, state.db group commit)', url: oursUrl, runs: [] },
      { name: 'floor: node:http, append + fsync (group commit)', url: floorUrl, runs: [] },
    ];
    // Warm-up: a short run per side (JIT, sockets, the database's first pages).
    for (const s of sides) await drive(s.url, { clients, durationMs: Math.min(500, durationMs), tag: `w-${s === sides[0] ? 'o' : 'f'}` });
    const before = await metricsOf(oursUrl);
    const floorBefore = JSON.parse((await request(floorUrl, { pathname: '/stats' })).text);
    for (let i = 0; i < samples; i++) {
      const order = i % 2 === 0 ? sides : [sides[1], sides[0]];
      for (const s of order) s.runs.push(await drive(s.url, { clients, durationMs, tag: `${i}-${s === sides[0] ? 'o' : 'f'}` }));
    }
    const after = await metricsOf(oursUrl);
    const floorAfter = JSON.parse((await request(floorUrl, { pathname: '/stats' })).text);
    const figures = (s) => {
      const lat = s.runs.flatMap((r) => r.latencies);
      const perAck = s.runs.map((r) => 1000 / r.acksPerS);
      return side(s.name, perAck, {
        samples: perAck,
        acksPerS: median(s.runs.map((r) => r.acksPerS)),
        acksPerSSamples: s.runs.map((r) => r.acksPerS),
        acks: lat.length,
        spooled: s.runs.reduce((n, r) => n + r.spooled, 0),
        p50Ms: quantile(lat, 0.5),
        p99Ms: quantile(lat, 0.99),
      });
    };
    const o = figures(sides[0]);
    const f = figures(sides[1]);
    const commits = after.commits - before.commits;
    const committed = after.committed - before.committed;
    const floorCycles = floorAfter.cycles - floorBefore.cycles;
    const floorAcked = floorAfter.acked - floorBefore.acked;
    await stop(ours, 143, 'hermes-gateway');
    await stop(floor, 0, 'the floor server');
    const perCommit = commits === 0 ? 0 : committed / commits;
    const floorPerCycle = floorCycles === 0 ? 0 : floorAcked / floorCycles;
    return {
      id: `G${clients}`,
      title: `durable acks, ${clients} concurrent client${clients === 1 ? '' : 's'} (keep-alive, sequential posts over ${SESSIONS} sessions, idempotency keys)`,
      unit: 'per ack',
      noise: 'fsync',
      target: { op: '<=', ratio: 2 },
      ours: o,
      baseline: f,
      ratio: o.medianMs / f.medianMs,
      throughput: { ours: o.acksPerS, floor: f.acksPerS, ratio: o.acksPerS / f.acksPerS, target: 0.5 },
      groupCommit: { commits, committed, perCommit, floorCycles, floorAcked, floorPerCycle },
      durationMs,
      summary:
        `acks/s ours ${fmtInt(o.acksPerS)}, floor ${fmtInt(f.acksPerS)} (${(o.acksPerS / f.acksPerS).toFixed(2)}× the floor); ack latency p50 / p99: ` +
        `ours ${o.p50Ms.toFixed(2)} / ${o.p99Ms.toFixed(2)} ms, floor ${f.p50Ms.toFixed(2)} / ${f.p99Ms.toFixed(2)} ms`,
      notes: [
        `${fmtInt(o.acks)} acks ours, ${fmtInt(f.acks)} floor, in ${samples} × ${durationMs / 1000} s per side; ${perCommit.toFixed(1)} messages per state.db commit, ${floorPerCycle.toFixed(1)} per floor fsync`,
      ],
    };
  } catch (err) {
    ours.proc.kill('SIGKILL');
    floor.proc.kill('SIGKILL');
    throw err;
  }
}

async function recoveryRun(workRoot, n, run) {
  const home = path.join(workRoot, `rec-${n}-${run}`, 'home');
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  seedSpool(home, n);
  const svc = spawnService([BIN, '--home', home, '--port', '0', ...SLOW_TURNS], {
    urlFrom: (stream, line) => {
      const rec = stream === 'stderr' ? jsonLine(line) : undefined;
      return typeof rec?.url === 'string' && rec.msg?.startsWith('listening') === true ? rec.url : undefined;
    },
  });
  try {
    const url = await svc.url;
    const listeningMs = performance.now() - svc.t0;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const readyAt = await waitReady(url, agent);
    agent.destroy();
    const readyMs = readyAt - svc.t0;
    const m = await metricsOf(url);
    const readyLine = svc.out.lines.map((l) => jsonLine(l.line)).find((r) => r?.msg === 'ready');
    await stop(svc, 143, 'hermes-gateway');
    if (m.recovered !== n) throw new Error(`G-rec: ${n} payloads seeded, ${m.recovered} recovered:\n${svc.out.stderr.slice(-2000)}`);
    const left = fs.readdirSync(path.join(home, 'pending_messages')).filter((f) => f.endsWith('.json')).length;
    fs.rmSync(path.dirname(home), { recursive: true, force: true });
    return { readyMs, listeningMs, recovered: m.recovered, recoveryMs: readyLine?.recoveryMs, leftInSpool: left };
  } catch (err) {
    svc.proc.kill('SIGKILL');
    throw err;
  }
}

/** The service rows (see the module comment); `want(id)` skips the rows not asked for. */
export async function serviceCases(workRoot, { samples, quick, want = () => true, log = (m) => process.stderr.write(m) }) {
  if (!fs.existsSync(BIN)) throw new Error(`${path.relative(process.cwd(), BIN)} is missing: build the gateway first (pnpm bench builds every package)`);
  fs.mkdirSync(workRoot, { recursive: true });
  const results = [];
  const durationMs = quick ? 1500 : 3000;
  for (const clients of [1, 10, 100]) {
    if (!want(`G${clients}`)) continue;
    log(`bench: service G${clients}: ${samples} × ${durationMs / 1000} s per side…\n`);
    const row = await throughputRow(workRoot, clients, { samples, durationMs });
    log(`bench: service G${clients}: ${row.summary}; ${row.notes[0]}\n`);
    results.push(row);
  }
  const sizes = [
    ['G-rec-1k', 1000],
    ['G-rec-20k', 20_000],
    ['G-rec-100k', 100_000],
  ];
  for (const [id, n] of sizes) {
    if (!want(id)) continue;
    const runs = quick || n > 20_000 ? 1 : 3;
    const all = [];
    for (let r = 0; r < runs; r++) all.push(await recoveryRun(workRoot, n, r));
    const readyS = median(all.map((x) => x.readyMs)) / 1000;
    const rec = median(all.map((x) => x.recoveryMs ?? NaN));
    const listening = median(all.map((x) => x.listeningMs));
    log(`bench: service ${id}: spawn → /readyz 200 in ${readyS.toFixed(2)} s, ${fmtInt(all[0].recovered)} recovered\n`);
    results.push({
      id,
      kind: 'absolute',
      title: `start-up recovery of ${fmtInt(n)} payload files: spawn → /readyz 200`,
      unit: 's',
      noise: 'fsync',
      value: readyS,
      detail: `${fmtInt(all[0].recovered)} recovered, ${all[0].leftInSpool} left in the spool; the recovery itself ${(rec / 1000).toFixed(2)} s, listening after ${(listening / 1000).toFixed(2)} s (median of ${runs} run${runs === 1 ? '' : 's'})`,
      recovery: { runs: all },
    });
  }
  return results;
}
