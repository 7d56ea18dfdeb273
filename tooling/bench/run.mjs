#!/usr/bin/env node
// pnpm bench: every case, warm-up + repeated interleaved samples, median and spread, ratio against the
// baseline measured in the same run. Not part of pnpm test.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { cliCases } from './cases-cli.mjs';
import { doctorCases } from './cases-doctor.mjs';
import { gatewayCases } from './cases-gateway.mjs';
import { matrixCases } from './cases-matrix.mjs';
import { primitiveCases } from './cases-primitives.mjs';

const args = new Set(process.argv.slice(2));
const json = args.has('--json');
const quick = args.has('--quick');
const samples = quick ? 3 : 9;
const only = [...args].find((a) => a.startsWith('--only='))?.slice('--only='.length).split(',');

const GROUP_OF = { B1: 'primitives', B1b: 'primitives', B2: 'primitives', 'B2-floor': 'primitives', 'B2b-sync': 'primitives', B2b: 'primitives', 'B2b-many': 'primitives', B3: 'gateway', B4: 'gateway', B5: 'doctor', B6: 'matrix', B7: 'cli', B7b: 'cli', B8: 'cli' };
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-bench-'));
const results = [];
try {
  const groups = [
    ['primitives', () => primitiveCases(path.join(work, 'p'), { samples })],
    ['gateway', () => gatewayCases(path.join(work, 'g'), { samples })],
    ['doctor', () => doctorCases(path.join(work, 'd'), { samples })],
    ['matrix', () => matrixCases(path.join(work, 'm'), { samples })],
    ['cli', () => cliCases(path.join(work, 'c'), { samples })],
  ];
  for (const [name, run] of groups) {
    if (only && !only.some((o) => o === name || (GROUP_OF[o] ?? '') === name)) continue;
    const rs = await run();
    for (const r of rs) if (!only || only.includes(r.id) || only.includes(name)) results.push(r);
  }
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}

function verdict(r) {
  if (r.target.op === '<=') return r.ratio <= r.target.ratio;
  if (r.target.op === '>=faster') return 1 / r.ratio >= r.target.ratio;
  return false;
}
function targetText(r) {
  return r.target.op === '<=' ? `<= ${r.target.ratio}x` : `>= ${r.target.ratio}x faster`;
}
function fmt(ms, unit) {
  if (unit === 'MiB') return `${ms.toFixed(0)} MiB`;
  return ms >= 1 ? `${ms.toFixed(2)} ms` : `${(ms * 1000).toFixed(1)} us`;
}

if (json) {
  process.stdout.write(`${JSON.stringify({ node: process.version, cpus: os.cpus().length, results }, null, 2)}\n`);
} else {
  console.log(`node ${process.version}, ${os.cpus().length} cpus, ${os.cpus()[0]?.model ?? 'unknown cpu'}; ${samples} samples per side`);
  console.log('| case | ours (median ± IQR) | baseline (median ± IQR) | ratio | target | met |');
  console.log('|---|---|---|---|---|---|');
  for (const r of results) {
    const ratio = r.target.op === '>=faster' ? `${(1 / r.ratio).toFixed(2)}x faster` : `${r.ratio.toFixed(3)}x`;
    console.log(
      `| ${r.id} ${r.title} | ${r.ours.name}: ${fmt(r.ours.medianMs, r.ours.unit)} ±${(r.ours.spread * 100).toFixed(0)}% | ${r.baseline.name}: ${fmt(r.baseline.medianMs, r.baseline.unit)} ±${(r.baseline.spread * 100).toFixed(0)}% | ${ratio} | ${targetText(r)} | ${verdict(r) ? 'yes' : 'MISSED'} |`,
    );
    for (const extra of r.notes ?? []) console.log(`|  | ${extra} | | | | |`);
  }
}
