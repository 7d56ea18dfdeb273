// B6: hermes-fs matrix --json (five scenario children writing every artifact, cross-uid rows off so the case
// does not depend on root), against its floor: the same five children started the same way
// (`/bin/sh -c 'umask … && exec node …'`, in parallel) that only load the writer packages and exit.
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { compare } from './harness.mjs';

const BIN = fileURLToPath(new URL('../../apps/hermes-fs/dist/bin.js', import.meta.url));
const FLOOR_CHILD = fileURLToPath(new URL('./matrix-floor-child.mjs', import.meta.url));
/** The umasks of scenarios S1–S5 (docs/permissions.md). */
const UMASKS = ['0022', '0077', '0007', '0007', '0022'];

function floorChild(umask) {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', `umask ${umask} && exec "$0" "$@"`, process.execPath, FLOOR_CHILD], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status) => (status === 0 ? resolve() : reject(new Error(`floor child exited ${status}: ${stderr}`))));
  });
}

export async function matrixCases(_workRoot, { samples }) {
  const result = await compare({
    id: 'B6',
    ours: {
      name: 'hermes-fs matrix --json --no-cross-uid (whole process)',
      run: () => {
        const r = spawnSync(process.execPath, [BIN, 'matrix', '--json', '--no-cross-uid'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
        if (r.error) throw r.error;
        if (r.status !== 0) throw new Error(`matrix failed (${r.status}): ${r.stderr}`);
      },
    },
    baseline: {
      name: 'five children loading the writer packages (floor)',
      run: () => Promise.all(UMASKS.map(floorChild)),
    },
    samples: Math.max(3, Math.ceil(samples / 2)),
    warmup: 1,
  });
  return [{ id: 'B6', title: 'permission matrix, 5 scenarios × 10 cells', target: { op: '<=', ratio: 4 }, unit: 'per run', ...result }];
}
