#!/usr/bin/env node
// The stop benchmark: how long a stop takes, from SIGTERM to the process's exit, with 2,000 / 20,000 / 100,000
// pending messages against a 5 s budget — through the hook's signal path and through process.exit() — each stop a
// real child process on the real disk (stop-child.mjs). After each stop the spool is read back (payload files and
// batch members, each message counted once by its process_id/pid/seq) and temp files are counted. Reports the
// median of the runs. Part of `pnpm bench` (rows S-<n>-signal / S-<n>-exit); alone:
// `node tooling/bench/stop-deadline.mjs [--runs=3] [--sizes=2000,20000]`.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseTempName } from '../../packages/fs-policy/dist/index.js';

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'stop-child.mjs');

function stopOnce(home, mode, n, budget) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, mode, String(n), String(budget)], { env: { ...process.env, HERMES_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let t0 = 0;
    child.stdout.on('data', (d) => {
      out += d;
      if (t0 === 0 && out.includes('READY\n')) {
        t0 = performance.now();
        child.kill('SIGTERM');
      }
    });
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${mode} ${n}: no exit within 600 s`));
    }, 600_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (t0 === 0) {
        reject(new Error(`stop child (${mode}, ${n}) exited ${code} before READY: ${err.trim()}`));
        return;
      }
      const line = out.split('\n').find((l) => l.startsWith('STOP '));
      resolve({ code, ms: performance.now() - t0, hook: line ? JSON.parse(line.slice(5)) : undefined });
    });
  });
}

function readBack(home) {
  const dir = path.join(home, 'pending_messages');
  const ids = new Set();
  let temps = 0;
  let batches = 0;
  for (const name of fs.readdirSync(dir)) {
    if (parseTempName(name) !== null) temps++;
    else if (/^batch-[0-9a-f]{32}\.json$/.test(name)) {
      batches++;
      for (const m of JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')).payloads) {
        const p = JSON.parse(m.text);
        ids.add(`${p.process_id}/${p.pid}/${p.seq}`);
      }
    } else if (name.endsWith('.json')) {
      const p = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'));
      ids.add(`${p.process_id}/${p.pid}/${p.seq}`);
    }
  }
  return { onDisk: ids.size, temps, batches };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * Runs every stop (`runs` per size and path) under `workRoot` and returns one row per size and path: the median
 * stop time against the budget (`kind: 'absolute'`, seconds), and what the spool held afterwards.
 */
export async function stopCases(workRoot, { runs = 3, sizes = [2000, 20000, 100000], budget = 5000, log = (m) => process.stderr.write(m) } = {}) {
  fs.mkdirSync(workRoot, { recursive: true });
  const rows = [];
  for (const n of sizes) {
    for (const mode of ['signal', 'exit']) {
      const samples = [];
      for (let r = 0; r < runs; r++) {
        const home = path.join(workRoot, `${mode}-${n}-${r}`);
        const s = await stopOnce(home, mode, n, budget);
        samples.push({ ...s, ...readBack(home) });
        fs.rmSync(home, { recursive: true, force: true });
      }
      const ms = median(samples.map((s) => s.ms));
      log(`${mode} ${n}: ${samples.map((s) => `${s.ms.toFixed(0)} ms`).join(', ')} (median ${ms.toFixed(0)} ms)\n`);
      const lost = samples.map((s) => n - s.onDisk);
      rows.push({
        id: `S-${n}-${mode}`,
        kind: 'absolute',
        title: `stop with ${n.toLocaleString('en-US')} pending, ${mode === 'signal' ? 'SIGTERM (hook)' : 'process.exit()'}`,
        unit: 's',
        noise: 'fsync',
        value: ms / 1000,
        target: { op: '<=', value: budget / 1000 },
        lostAny: lost.some((l) => l !== 0),
        stop: {
          pending: n,
          mode,
          runsS: samples.map((s) => s.ms / 1000),
          lost,
          inBatchMedian: median(samples.map((s) => s.hook?.inBatch ?? 0)),
          tempsMax: Math.max(...samples.map((s) => s.temps)),
          exitCodes: [...new Set(samples.map((s) => s.code))],
        },
      });
    }
  }
  return rows;
}

/** The stop rows as a Markdown table (stop time, every run, what was on disk, temps left, exit statuses). */
export function stopTable(rows) {
  const lines = [
    '| pending | stop path | stop time (median) | runs | on disk (every run) | in a batch file (median) | temps left (max) | exit status | within the budget |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const { pending: n, mode, runsS, lost, inBatchMedian, tempsMax, exitCodes } = r.stop;
    const all = n.toLocaleString('en-US');
    lines.push(
      `| ${all} | ${mode === 'signal' ? 'SIGTERM (hook)' : 'process.exit()'} | ${r.value.toFixed(2)} s | ${runsS.map((x) => x.toFixed(2)).join(', ')} s | ` +
        `${lost.every((l) => l === 0) ? `${all} of ${all}` : `LOST ${lost.join(', ')}`} | ${inBatchMedian.toLocaleString('en-US')} | ${tempsMax} | ${exitCodes.join(', ')} | ${r.met ? 'yes' : '**missed**'} |`,
    );
  }
  return lines.join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const opt = (name, fallback) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
  const budget = Number(opt('budget', '5000'));
  const runs = Number(opt('runs', '3'));
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-bench-stop-'));
  let rows;
  try {
    rows = await stopCases(work, { runs, budget, sizes: opt('sizes', '2000,20000,100000').split(',').map(Number) });
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  for (const r of rows) r.met = !r.lostAny && r.value <= r.target.value;
  const load = os.loadavg().map((l) => l.toFixed(1)).join(' / ');
  console.log(`node ${process.version}, ${os.cpus().length} cpus, load average ${load} at the end; budget ${budget} ms; ${runs} runs each, medians`);
  console.log(stopTable(rows));
}
