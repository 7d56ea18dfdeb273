// Peak-RSS check for recovery (not part of the test suite; build first): seeds N spool files as benchmark B4
// does and runs tooling/bench/rss-child.mjs on them, which prints the RSS before recovery and the peak during it.
// Usage: node packages/gateway/scripts/recover-rss.mjs [count=100000]
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { seedSpool } from '../../../tooling/bench/cases-gateway.mjs';

const count = Number(process.argv[2] ?? '100000');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-gw-rss-'));
try {
  seedSpool(home, count);
  const child = fileURLToPath(new URL('../../../tooling/bench/rss-child.mjs', import.meta.url));
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [child, home, String(count)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`rss child failed: ${r.stderr}`);
  console.log(r.stdout.trim(), `(child ${(performance.now() - t0).toFixed(0)} ms)`);
} finally {
  fs.rmSync(home, { recursive: true, force: true });
}
