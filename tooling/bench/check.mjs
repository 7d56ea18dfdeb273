#!/usr/bin/env node
// pnpm bench:check: compares one run's ratios with the committed run (tooling/bench/results/latest.json) and exits
// 1 naming each case whose figure grew past its tolerance. Either re-runs the benchmark (any `pnpm bench` flag:
// --quick, --only=…) or takes --results=FILE of a run just made (`pnpm bench --out=FILE`).
//   --against=FILE     the committed run to compare with (default tooling/bench/results/latest.json)
//   --tolerance=0.3    one tolerance for every case instead of the per-class ones below
//   --report-only      print the comparison and exit 0 whatever it says (CI: the machines are noisy)
// Exit: 0 within tolerance, 1 a case past it, 2 the comparison could not be made.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkValue, RESULTS_FILE } from './results.mjs';

/**
 * How much a case's figure (its ratio, or an absolute row's value; lower is better) may grow over the committed
 * run before bench:check fails, by the noise class the case declares. Ratios, not times: both sides of a case
 * share the machine's state, so a ratio moves far less than an absolute time. CPU-bound cases repeated on one
 * machine move by up to ~15 %; fsync-bound cases follow the virtual disk's latency, which varies 2× through a day
 * and hits the two sides unequally (the fsyncs overlap on one side only); peak RSS barely moves (±5 %).
 */
export const TOLERANCE = { cpu: 0.25, fsync: 0.5, memory: 0.15 };

/**
 * @typedef {{ id: string, status: string, now?: number, was?: number, change?: number, tol: number, noise?: string }} CheckRow
 */

/**
 * Compares `fresh` with `committed` row by row: regressions past tolerance, improvements past it, the rest.
 * @param {{ results: any[] }} committed
 * @param {{ results: any[] }} fresh
 * @param {{ tolerance?: number }} [options]
 * @returns {{ rows: CheckRow[], notRun: string[], regressed: CheckRow[] }}
 */
export function compareRuns(committed, fresh, { tolerance } = {}) {
  const before = new Map(committed.results.map((r) => [r.id, r]));
  const rows = [];
  for (const r of fresh.results) {
    const old = before.get(r.id);
    const now = checkValue(r);
    const was = old === undefined ? undefined : checkValue(old);
    const tol = tolerance ?? TOLERANCE[r.noise ?? 'cpu'];
    if (now === undefined || was === undefined) {
      rows.push({ id: r.id, status: r.kind === 'skipped' ? `skipped: ${r.reason}` : 'no committed figure', now, was, tol });
      continue;
    }
    const change = now / was - 1;
    rows.push({ id: r.id, now, was, change, tol, noise: r.noise ?? 'cpu', status: change > tol ? 'REGRESSED' : change < -tol ? 'improved' : 'ok' });
  }
  const ran = new Set(fresh.results.map((r) => r.id));
  const notRun = committed.results.filter((r) => !ran.has(r.id)).map((r) => r.id);
  return { rows, notRun, regressed: rows.filter((r) => r.status === 'REGRESSED') };
}

/** The comparison as a Markdown table. */
export function comparisonTable({ rows }) {
  const f = (x) => (x === undefined ? '—' : x.toFixed(3));
  const lines = ['| case | committed | this run | change | tolerance | verdict |', '|---|---|---|---|---|---|'];
  for (const r of rows) {
    const change = r.change === undefined ? '—' : `${r.change >= 0 ? '+' : ''}${(r.change * 100).toFixed(1)} %`;
    lines.push(`| ${r.id} | ${f(r.was)} | ${f(r.now)} | ${change} | +${(r.tol * 100).toFixed(0)} %${r.noise ? ` (${r.noise})` : ''} | ${r.status} |`);
  }
  return lines.join('\n');
}

function readRun(file, what) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    console.error(`bench:check: cannot read ${what} ${file} (${e.code ?? e.message}); ${what === 'the committed run' ? 'make one with `pnpm bench`' : 'make it with `pnpm bench --out=FILE`'}`);
    process.exit(2);
  }
}

async function main() {
  const argv = process.argv.slice(2);
  /** Takes `--name=value` or `--name value` out of argv (what is left goes to the benchmark run). */
  const opt = (name) => {
    const i = argv.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
    if (i < 0) return undefined;
    if (argv[i].includes('=')) return argv.splice(i, 1)[0].slice(name.length + 3);
    const [, value] = argv.splice(i, 2);
    if (value === undefined) {
      console.error(`bench:check: --${name} needs a value`);
      process.exit(2);
    }
    return value;
  };
  const resultsFile = opt('results');
  const against = opt('against') ?? RESULTS_FILE;
  const tolText = opt('tolerance');
  const reportOnly = argv.includes('--report-only');
  const benchArgs = argv.filter((a) => a !== '--report-only');
  const tolerance = tolText === undefined ? undefined : Number(tolText);
  if (tolerance !== undefined && !(tolerance >= 0)) {
    console.error(`bench:check: --tolerance=${tolText} is not a non-negative number`);
    process.exit(2);
  }
  const committed = readRun(against, 'the committed run');
  let fresh;
  if (resultsFile !== undefined) fresh = readRun(path.resolve(resultsFile), 'the results file');
  else {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-bench-check-'));
    const file = path.join(tmp, 'run.json');
    const run = fileURLToPath(new URL('./run.mjs', import.meta.url));
    const r = spawnSync(process.execPath, [run, ...benchArgs, `--out=${file}`], { stdio: ['ignore', 'inherit', 'inherit'] });
    if (r.error || r.status !== 0) {
      console.error(`bench:check: the benchmark run failed (${r.error?.message ?? `exit ${r.status}`}); nothing to compare`);
      fs.rmSync(tmp, { recursive: true, force: true });
      process.exit(2);
    }
    fresh = readRun(file, 'the results file');
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const cmp = compareRuns(committed, fresh, { tolerance });
  console.log(`bench:check: this run (${fresh.machine.commit}, ${fresh.command}) against the committed run (${committed.machine.commit}, ${committed.machine.date.slice(0, 10)})`);
  if (fresh.plant) console.log(`bench:check: this run carries a planted regression (HERMES_BENCH_PLANT=${fresh.plant})`);
  console.log(comparisonTable(cmp));
  if (cmp.notRun.length > 0) console.log(`not run this time: ${cmp.notRun.join(', ')}`);
  const compared = cmp.rows.filter((r) => r.change !== undefined).length;
  console.log(`bench:check: ${compared} compared, ${cmp.regressed.length} past tolerance${cmp.regressed.length > 0 ? ` (${cmp.regressed.map((r) => r.id).join(', ')})` : ''}`);
  if (compared === 0) {
    console.error('bench:check: no case of this run has a committed figure to compare with');
    process.exit(reportOnly ? 0 : 2);
  }
  process.exit(cmp.regressed.length > 0 && !reportOnly ? 1 : 0);
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
