#!/usr/bin/env node
// pnpm bench: every case, warm-up + repeated interleaved samples, median and IQR, ratio against the baseline
// measured in the same run. A full run writes tooling/bench/results/latest.json and regenerates BENCHMARKS.md's
// result tables from it. Not part of pnpm test.
//   --quick          3 samples per side (1 stop run per size; smaller peer jobs)
//   --only=A,B       cases or groups (primitives, gateway, doctor, matrix, cli, moa, peer, stop, service); a partial run
//                    writes nothing unless --out is given. In native mode the primitives also run in procfd mode (a
//                    child process, ids `<id>-procfd`): `--only=B1` measures both, `--only=B1-procfd` that one.
//   --out=FILE       write this run's JSON to FILE instead (BENCHMARKS.md untouched): what bench:check compares
//   --no-write       write nothing (trial runs)
//   --json           print the JSON instead of the table
//   --render         run nothing: regenerate BENCHMARKS.md's tables from results/latest.json (after a renderer change)
// HERMES_BENCH_PLANT=B2:50us plants a regression (harness.mjs); a planted run never writes the committed files.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { anchorInfo } from '../../packages/fs-policy/dist/index.js';
import { cliCases } from './cases-cli.mjs';
import { doctorCases } from './cases-doctor.mjs';
import { gatewayCases } from './cases-gateway.mjs';
import { matrixCases } from './cases-matrix.mjs';
import { moaCases } from './cases-moa.mjs';
import { peerCases } from './cases-peer.mjs';
import { primitiveCases } from './cases-primitives.mjs';
import { serviceCases } from './cases-service.mjs';
import { caseRows, machineInfo, regenerateBenchmarks, renderMarkdown, RESULTS_FILE, verdict, writeResults } from './results.mjs';
import { stopCases, stopTable } from './stop-deadline.mjs';

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(`--${name}`);
const opt = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const known = /^--(quick|json|no-write|render|only=.+|out=.+)$/;
const unknown = argv.filter((a) => !known.test(a));
if (unknown.length > 0) {
  console.error(`bench: unknown argument(s) ${unknown.join(' ')} (known: --quick --only=A,B --out=FILE --no-write --json --render)`);
  process.exit(2);
}
if (flag('render')) {
  regenerateBenchmarks(renderMarkdown(JSON.parse(fs.readFileSync(RESULTS_FILE, 'utf8'))));
  console.error(`bench: regenerated BENCHMARKS.md's result tables from ${path.relative(process.cwd(), RESULTS_FILE)}`);
  process.exit(0);
}
const json = flag('json');
const quick = flag('quick');
const noWrite = flag('no-write');
const out = opt('out');
const samples = quick ? 3 : 9;
const only = opt('only')?.split(',');
const plant = process.env.HERMES_BENCH_PLANT;

const GROUP_OF = {
  B1: 'primitives', 'B1-floor-native': 'primitives', B1b: 'primitives', B2: 'primitives', 'B2-floor': 'primitives', 'B2-floor-native': 'primitives', 'B2b-sync': 'primitives', B2b: 'primitives', 'B2b-many': 'primitives', R1: 'primitives',
  B3: 'gateway', B4: 'gateway', 'B4-cpu': 'gateway', 'B4-mem': 'gateway', 'B4-mem-full': 'gateway', B5: 'doctor', B6: 'matrix', B7: 'cli', B7b: 'cli', B8: 'cli',
  M1: 'moa', 'M1-async': 'moa', P1: 'peer', P2: 'peer', P3: 'peer', P4: 'peer',
  G1: 'service', G10: 'service', G100: 'service', 'G-rec-1k': 'service', 'G-rec-20k': 'service', 'G-rec-100k': 'service',
};
/** A primitive case measured in procfd mode by mode-child.mjs is `<id>-procfd`, in the group of `<id>`. */
const PROCFD = '-procfd';
const baseOf = (id) => (id.endsWith(PROCFD) ? id.slice(0, -PROCFD.length) : id);
const groupOf = (id) => GROUP_OF[baseOf(id)] ?? (id.startsWith('S-') ? 'stop' : undefined);
const wanted = (group, id) =>
  !only || only.includes(group) || (id === undefined ? only.some((o) => groupOf(o) === group) : only.includes(id) || only.includes(baseOf(id)));

/**
 * The primitive cases again in procfd mode, in a child process (the mode is per process): run when this process is
 * in native mode, so that both modes are measured side by side in one run. Their ids get `-procfd`.
 */
function procfdCases(workRoot) {
  // `<id>-procfd` is wanted for --only=<id>, --only=<id>-procfd and --only=primitives.
  const ids = Object.keys(GROUP_OF).filter((id) => GROUP_OF[id] === 'primitives' && wanted('primitives', `${id}${PROCFD}`));
  if (ids.length === 0) return [];
  const r = spawnSync(process.execPath, [fileURLToPath(new URL('./mode-child.mjs', import.meta.url)), workRoot, String(samples), ids.join(',')], {
    env: { ...process.env, HERMES_FS_ANCHOR: 'procfd' },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`bench: the procfd-mode child failed (${r.error?.message ?? `exit ${String(r.status)}`})`);
  const doc = JSON.parse(r.stdout);
  if (doc.anchor.mode !== 'procfd') throw new Error(`bench: the procfd-mode child ran in ${String(doc.anchor.mode)} mode`);
  return doc.results.map((row) => ({ ...row, id: `${row.id}${PROCFD}` }));
}

const machine = machineInfo();
const t0 = performance.now();
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-bench-'));
const results = [];
try {
  const groups = [
    ['primitives', () => primitiveCases(path.join(work, 'p'), { samples, want: (id) => wanted('primitives', id) })],
    ...(anchorInfo().mode === 'native' ? [['primitives (procfd mode)', () => procfdCases(path.join(work, 'pp'))]] : []),
    ['gateway', () => gatewayCases(path.join(work, 'g'), { samples })],
    ['doctor', () => doctorCases(path.join(work, 'd'), { samples })],
    ['matrix', () => matrixCases(path.join(work, 'm'), { samples })],
    ['cli', () => cliCases(path.join(work, 'c'), { samples })],
    ['moa', () => moaCases(path.join(work, 'moa'), { samples })],
    ['peer', () => peerCases(path.join(work, 'py'), { quick, ids: only?.includes('peer') ? undefined : only?.filter((o) => groupOf(o) === 'peer') })],
    ['stop', () => stopCases(path.join(work, 's'), { runs: quick ? 1 : 3 })],
    ['service', () => serviceCases(path.join(work, 'svc'), { samples, quick, want: (id) => wanted('service', id) })],
  ];
  for (const [name, run] of groups) {
    const group = name.split(' ')[0];
    if (!wanted(group)) continue;
    process.stderr.write(`bench: ${name}…\n`);
    const rs = await run();
    for (const r of rs) if (wanted(group, r.id) || r.kind === 'skipped') results.push(r);
  }
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
for (const r of results) r.met = verdict(r);

const doc = {
  schema: 1,
  command: ['pnpm bench', ...argv.filter((a) => !a.startsWith('--out='))].join(' '),
  quick,
  samples,
  only: only ?? null,
  plant: plant ?? null,
  machine: { ...machine, loadAverageEnd: os.loadavg() },
  elapsedS: (performance.now() - t0) / 1000,
  results,
};

if (json) process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
else {
  console.log(`node ${process.version}, ${machine.cpuCount} cpus, ${machine.cpuModel}; ${samples} samples per side; commit ${machine.commit}`);
  const tables = results.filter((r) => !r.id.startsWith('S-'));
  if (tables.length > 0) console.log(caseRows(tables));
  const stops = results.filter((r) => r.id.startsWith('S-'));
  if (stops.length > 0) console.log(stopTable(stops));
}

if (plant) console.error(`bench: HERMES_BENCH_PLANT=${plant} is set: this run carries a planted regression`);
if (out !== undefined) {
  writeResults(doc, path.resolve(out));
  console.error(`bench: results written to ${path.resolve(out)}`);
} else if (noWrite) {
  console.error('bench: --no-write: results/latest.json and BENCHMARKS.md left as they are');
} else if (only || plant) {
  console.error(`bench: ${plant ? 'a planted run' : 'a partial run (--only)'} does not replace the committed results; --out=FILE keeps its JSON`);
} else {
  writeResults(doc, RESULTS_FILE);
  regenerateBenchmarks(renderMarkdown(doc));
  console.error(`bench: wrote ${path.relative(process.cwd(), RESULTS_FILE)} and regenerated BENCHMARKS.md's result tables`);
}
