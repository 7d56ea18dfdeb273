// Measures (not part of the test suite; build first: `pnpm turbo run build --filter=@hermes/gateway...`):
//   1. a durable batch flush of N messages (default 2,000): every payload fsynced, then one directory fsync;
//      async with bounded concurrency, against the synchronous one-after-the-other flush measured in the same
//      run as the baseline (the rounds are interleaved; medians are reported, since VM disks are noisy);
//   2. recovery of M payloads (default 20,000) into state.db (batched transactions, synchronous = FULL).
// Usage: node packages/gateway/scripts/bench.mjs [flushCount=2000] [recoverCount=20000] [rounds=3]
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { silentLogger } from '@hermes/fs-policy';
import { openSessionDb } from '@hermes/session-db';
import { DEFAULT_CONCURRENCY, flushOverflow, flushOverflowSync, recoverPending } from '../dist/index.js';

const flushCount = Number(process.argv[2] ?? '2000');
const recoverCount = Number(process.argv[3] ?? '20000');
const rounds = Number(process.argv[4] ?? '3');
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-gw-bench-'));
const KEY = 'agent:main:telegram:dm:1';
let dirs = 0;

function events(n) {
  return Array.from({ length: n }, (_, i) => ({ text: `message ${i} ${'x'.repeat(200)}`, session_id: 'bench' }));
}

function check(label, report) {
  if (report.written.length !== flushCount || report.failed.length !== 0 || !report.durable) {
    throw new Error(`${label}: ${report.written.length} written, ${report.failed.length} failed`);
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const variants = [
  { label: `sync flush of ${flushCount} (sequential fsyncs) [baseline]`, run: (home) => flushOverflowSync({ [KEY]: events(flushCount) }, { home, logger: silentLogger }) },
  {
    label: `async batch flush of ${flushCount} (concurrency ${DEFAULT_CONCURRENCY}, default)`,
    run: (home) => flushOverflow({ [KEY]: events(flushCount) }, { home, logger: silentLogger }),
  },
  {
    label: `async batch flush of ${flushCount} (concurrency 128)`,
    run: (home) => flushOverflow({ [KEY]: events(flushCount) }, { home, concurrency: 128, logger: silentLogger }),
  },
];

try {
  const times = variants.map(() => []);
  for (let r = 0; r < rounds; r++) {
    for (const [i, v] of variants.entries()) {
      const home = path.join(root, `flush-${dirs++}`);
      const t0 = performance.now();
      const report = await v.run(home);
      times[i].push(performance.now() - t0);
      check(v.label, report);
      fs.rmSync(home, { recursive: true, force: true });
    }
  }
  const baseline = median(times[0]);
  for (const [i, v] of variants.entries()) {
    const m = median(times[i]);
    console.log(
      `${v.label.padEnd(58)} median ${m.toFixed(0).padStart(6)} ms  (runs: ${times[i].map((t) => t.toFixed(0)).join(', ')})  ${(baseline / m).toFixed(2)}x baseline`,
    );
  }

  // Recovery: payloads written with plain writes (no fsync): only the recovery is measured.
  const home = path.join(root, 'recover');
  const dir = path.join(home, 'pending_messages');
  fs.mkdirSync(dir, { recursive: true });
  const base = 1700000000;
  for (let i = 0; i < recoverCount; i++) {
    // Names in a scrambled order, so the (ts, seq) sort has work to do.
    const name = `pending-${((i * 2654435761) % 2 ** 32).toString(16).padStart(8, '0')}${i.toString(16).padStart(24, '0')}.json`;
    const payload = { schema_version: 1, kind: 'overflow', session_key: KEY, reason: 'shutdown', ts: base + i * 0.001, seq: i, index: i, pid: 1, process_id: 'bench', data: { text: `recovered ${i}`, session_id: 'bench' } };
    fs.writeFileSync(path.join(dir, name), JSON.stringify(payload, null, 2));
  }
  const db = openSessionDb({ home });
  db.createSession({ id: 'bench', source: 'telegram', sessionKey: KEY, startedAt: base - 1 });
  const t0 = performance.now();
  const report = recoverPending({ home, store: db, logger: silentLogger });
  const ms = performance.now() - t0;
  const rows = db.getSession('bench').message_count;
  db.close();
  if (report.inserted.length !== recoverCount || rows !== recoverCount || fs.readdirSync(dir).length !== 0) {
    throw new Error(`recovered ${report.inserted.length}, rows ${rows}`);
  }
  console.log(`recovery of ${recoverCount} payloads into state.db`.padEnd(58), `       ${ms.toFixed(0).padStart(6)} ms  (${(recoverCount / (ms / 1000)).toFixed(0)} payloads/s)`);
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
