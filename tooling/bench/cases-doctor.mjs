// B5: hermes-fs doctor --json on a home with 100,000 files, against find(1) printing mode, owner and path.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compare } from './harness.mjs';

const BIN = fileURLToPath(new URL('../../apps/hermes-fs/dist/bin.js', import.meta.url));

/** A home of `n` files: state files in the home, 0600 transcripts spread over sessions/ and memories/. */
export function seedLargeHome(home, n) {
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  const dirs = ['sessions', 'memories', 'logs', 'cron'];
  let made = 0;
  for (let d = 0; made < n; d++) {
    const dir = path.join(home, dirs[d % dirs.length], `batch-${d}`);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (let i = 0; i < 1000 && made < n; i++, made++) {
      fs.writeFileSync(path.join(dir, `item-${i}.json`), '{}', { mode: 0o600 });
    }
  }
  for (const top of dirs) fs.chmodSync(path.join(home, top), 0o700);
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } });
  if (r.error) throw r.error;
  return r;
}

export async function doctorCases(workRoot, { samples }) {
  const home = path.join(workRoot, 'home');
  seedLargeHome(home, 100_000);
  const result = await compare({
    id: 'B5',
    ours: {
      name: 'hermes-fs doctor --json (whole process)',
      run: () => {
        const r = run(process.execPath, [BIN, 'doctor', '--json', '--home', home]);
        if (r.status !== 0 && r.status !== 1) throw new Error(`doctor failed: ${r.stderr}`);
      },
    },
    baseline: {
      name: "find HOME -printf '%m %u %p\\n'",
      run: () => {
        const r = run('find', [home, '-printf', '%m %u %p\\n']);
        if (r.status !== 0) throw new Error(`find failed: ${r.stderr}`);
      },
    },
    samples: Math.max(3, Math.ceil(samples / 2)),
    warmup: 1,
  });
  fs.rmSync(home, { recursive: true, force: true });
  return [{ id: 'B5', title: 'doctor audit of a home with 100,000 files', target: { op: '<=', ratio: 3 }, unit: 'per audit', ...result }];
}
