// An entry removed between its open and its check is absent, never "a second name". SQLite removes a database's
// -wal when its last connection closes; a gateway opening state.db while another process (a recovery, an
// operator's CLI) closed it met a -wal with 0 links and refused it as EHARDLINK — the gateway process then exited
// (the order test's gateway, in one CI run). Here a real second process creates and removes the entry in a tight
// loop while this one pins it: before the fix about 75 of 20,000 pins were refused EHARDLINK.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect, it } from 'vitest';
import { holdDirectorySync, pinEntrySync, setLogger, silentLogger } from '../src/index.js';
import { tempEnv } from './helpers.js';

setLogger(silentLogger);

it('an entry another process keeps creating and removing: pinned or absent in 20,000 pins, 0 refusals', async () => {
  const env = tempEnv();
  const wal = path.join(env.home, 'state.db-wal');
  const stop = path.join(path.dirname(env.home), 'stop');
  const churn = `const fs = require('fs'); let n = 0;
    while (!fs.existsSync(${JSON.stringify(stop)})) for (let i = 0; i < 50; i++) { fs.writeFileSync(${JSON.stringify(wal)}, 'x'); fs.unlinkSync(${JSON.stringify(wal)}); n++; }
    console.log(n);`;
  const child = spawn(process.execPath, ['-e', churn], { stdio: ['ignore', 'pipe', 'inherit'] });
  let rounds = '';
  child.stdout.on('data', (d: Buffer) => (rounds += d.toString()));
  const closed = new Promise<void>((resolve) => {
    child.on('close', () => {
      resolve();
    });
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const dir = holdDirectorySync(env.home, { env });
  const seen = { pinned: 0, absent: 0 };
  const refused: Record<string, number> = {};
  try {
    // The churn is running before the pins start.
    const t0 = Date.now();
    while (!fs.existsSync(wal) && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 5));
    for (let i = 0; i < 20_000; i++) {
      try {
        const pin = pinEntrySync(dir, 'state.db-wal', { what: 'let the database use', owners: new Set([process.getuid?.() ?? 0, 0]) });
        if (pin === undefined) seen.absent++;
        else {
          seen.pinned++;
          fs.closeSync(pin.fd);
        }
      } catch (err) {
        const code = (err as { code?: string }).code ?? 'unknown';
        refused[code] = (refused[code] ?? 0) + 1;
      }
    }
  } finally {
    fs.writeFileSync(stop, '');
    await closed;
    clearTimeout(killer);
    dir.close();
  }
  console.log(`pin vs churn: ${JSON.stringify(seen)}, refused ${JSON.stringify(refused)}, ${rounds.trim()} create/remove rounds`);
  expect(refused).toEqual({});
  expect(seen.pinned).toBeGreaterThan(0);
  expect(seen.absent).toBeGreaterThan(0);
}, 120_000);
