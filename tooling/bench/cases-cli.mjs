// B7 (hermes-fs pending list on a large spool, whole process) and B8 (peak RSS of hermes-fs pending recover
// against the library alone), each against its baseline in the same run.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { seedSpool } from './cases-gateway.mjs';
import { compare, median, side } from './harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = fileURLToPath(new URL('../../apps/hermes-fs/dist/bin.js', import.meta.url));
const PRELOAD = path.join(HERE, 'maxrss-preload.mjs');
const MiB = 1024 * 1024;

function run(args, options = {}) {
  const r = spawnSync(process.execPath, args, {
    encoding: 'utf8',
    maxBuffer: 1024 * MiB,
    env: { ...process.env, NO_COLOR: '1', HERMES_HOME: undefined, ...options.env },
  });
  if (r.error) throw r.error;
  if (r.status !== 0 && !(options.okStatus ?? [0]).includes(r.status)) throw new Error(`${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return r;
}

/** Peak RSS (MiB) of one whole process: `node --import maxrss-preload.mjs …args`. */
function peakRss(workRoot, args, options = {}) {
  const file = path.join(workRoot, `rss-${process.hrtime.bigint()}`);
  run(['--import', PRELOAD, ...args], { ...options, env: { HERMES_BENCH_RSS_FILE: file } });
  const bytes = Number(fs.readFileSync(file, 'utf8').trim().split('\n').pop());
  fs.rmSync(file, { force: true });
  return bytes / MiB;
}

function listCase(id, home, n, samples) {
  return compare({
    id,
    ours: {
      name: 'hermes-fs pending list (whole process)',
      run: () => {
        const r = run([BIN, 'pending', 'list', '--home', home]);
        if (!r.stdout.includes(`of ${n.toLocaleString('en-US')} spool files`)) throw new Error(`${id}: unexpected output`);
      },
    },
    baseline: {
      name: 'readdir + read + JSON.parse each file (whole process)',
      run: () => {
        const r = run([path.join(HERE, 'list-floor.mjs'), home]);
        if (r.stdout.trim() !== String(n)) throw new Error(`${id}: floor listed ${r.stdout}`);
      },
    },
    samples,
    warmup: 1,
  });
}

export async function cliCases(workRoot, { samples }) {
  fs.mkdirSync(workRoot, { recursive: true });
  const results = [];

  // B7: pending list on 20,000 and 100,000 payload files.
  for (const [id, n, target] of [['B7', 20_000, 1000], ['B7b', 100_000, 5000]]) {
    const home = path.join(workRoot, `list-${n}`);
    fs.mkdirSync(home, { mode: 0o700 });
    seedSpool(home, n);
    const r = await listCase(id, home, n, n > 50_000 ? Math.max(3, Math.ceil(samples / 3)) : Math.max(3, Math.ceil(samples / 2)));
    const jsonMs = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      run([BIN, 'pending', 'list', '--json', '--home', home]);
      jsonMs.push(performance.now() - t0);
    }
    const jsonRss = peakRss(workRoot, [BIN, 'pending', 'list', '--json', '--home', home]);
    results.push({
      id,
      title: `pending list on ${n.toLocaleString('en-US')} spool files (whole process)`,
      target: { op: '<=', ratio: 2 },
      unit: 'per run',
      ...r,
      absolute: { targetMs: target, medianMs: r.ours.medianMs, met: r.ours.medianMs <= target, jsonMedianMs: median(jsonMs), jsonPeakRssMiB: jsonRss },
      notes: [
        `absolute target: table ≤ ${target / 1000} s, measured ${(r.ours.medianMs / 1000).toFixed(2)} s: ${r.ours.medianMs <= target ? 'yes' : 'MISSED'}`,
        `--json (every entry, streamed): ${(median(jsonMs) / 1000).toFixed(2)} s, peak RSS ${jsonRss.toFixed(0)} MiB`,
      ],
    });
    fs.rmSync(home, { recursive: true, force: true });
  }

  // B8: peak RSS of a 100,000-file recovery, the CLI (text and --json) against the library alone.
  const N = 100_000;
  const rss = { lib: [], cli: [], cliJson: [] };
  for (let i = 0; i < 2; i++) {
    for (const who of ['lib', 'cli', 'cliJson']) {
      const home = path.join(workRoot, `recover-${who}-${i}`);
      fs.mkdirSync(home, { mode: 0o700 });
      seedSpool(home, N);
      const args =
        who === 'lib'
          ? [path.join(HERE, 'recover-lib.mjs'), home, String(N)]
          : [BIN, 'pending', 'recover', '--home', home, ...(who === 'cliJson' ? ['--json'] : [])];
      rss[who].push(peakRss(workRoot, args));
      fs.rmSync(home, { recursive: true, force: true });
    }
  }
  const lib = median(rss.lib);
  const cli = median(rss.cli);
  const cliJson = median(rss.cliJson);
  results.push({
    id: 'B8',
    title: 'pending recover of 100,000 files: peak RSS of the whole process',
    target: { op: '<=', ratio: 1.3 },
    unit: 'MiB peak RSS',
    noise: 'memory',
    ours: side('hermes-fs pending recover', rss.cli, { samples: rss.cli, unit: 'MiB' }),
    baseline: side('recoverPending alone (library, same store)', rss.lib, { samples: rss.lib, unit: 'MiB' }),
    ratio: cli / lib,
    notes: [`with --json: ${cliJson.toFixed(0)} MiB (${(cliJson / lib).toFixed(2)}× the library's ${lib.toFixed(0)} MiB): ${cliJson / lib <= 1.3 ? 'yes' : 'MISSED'}`],
    rss: { libMiB: rss.lib, cliMiB: rss.cli, cliJsonMiB: rss.cliJson },
  });
  return results;
}
