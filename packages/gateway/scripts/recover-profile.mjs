// Profiling driver for recovery (not part of the test suite; build first:
// `pnpm turbo run build --filter=@hermes/gateway...`). Seeds N spool files exactly as benchmark B4 does
// (tooling/bench/cases-gateway.mjs seedSpool: scrambled names, one session) and times recoverPending.
// Usage:
//   node packages/gateway/scripts/recover-profile.mjs [count=20000] [rounds=3] [batchSize]
//   node --cpu-prof --cpu-prof-dir=/tmp/prof packages/gateway/scripts/recover-profile.mjs 20000 1
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { silentLogger } from '@hermes/fs-policy';
import { openSessionDb } from '@hermes/session-db';
import { seedSpool } from '../../../tooling/bench/cases-gateway.mjs';
import { recoverPending } from '../dist/index.js';

const count = Number(process.argv[2] ?? '20000');
const rounds = Number(process.argv[3] ?? '3');
const batchSize = process.argv[4] === undefined ? undefined : Number(process.argv[4]);
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-gw-prof-'));

try {
  const times = [];
  for (let r = 0; r < rounds; r++) {
    const home = path.join(root, `h${r}`);
    fs.mkdirSync(home);
    seedSpool(home, count);
    const db = openSessionDb({ home });
    let progress = 0;
    const t0 = performance.now();
    const report = recoverPending({
      home,
      store: db,
      logger: silentLogger,
      ...(batchSize === undefined ? {} : { batchSize }),
      onProgress: () => {
        progress++;
      },
    });
    const ms = performance.now() - t0;
    const rows = db.getSession('bench').message_count;
    db.close();
    if (report.inserted.length !== count || rows !== count || fs.readdirSync(path.join(home, 'pending_messages')).length !== 0) {
      throw new Error(`round ${r}: inserted ${report.inserted.length}, rows ${rows}`);
    }
    times.push(ms);
    console.log(`round ${r}: ${count} files in ${ms.toFixed(0)} ms (${(count / (ms / 1000)).toFixed(0)} files/s, ${progress} progress calls)`);
    fs.rmSync(home, { recursive: true, force: true });
  }
  const sorted = [...times].sort((a, b) => a - b);
  console.log(`median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(0)} ms`);
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
