#!/usr/bin/env node
// The stop benchmark: how long a stop takes, from SIGTERM to the process's exit, with 2,000 / 20,000 / 100,000
// pending messages against a 5 s budget — through the hook's signal path and through process.exit() — each stop a
// real child process on the real disk (stop-child.mjs). After each stop the spool is read back (payload files and
// batch members, each message counted once by its process_id/pid/seq) and temp files are counted. Reports the
// median of the runs. Not part of pnpm test (`node tooling/bench/stop-deadline.mjs [--runs=3] [--sizes=2000,20000]`).
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseTempName } from '../../packages/fs-policy/dist/index.js';

const args = process.argv.slice(2);
const opt = (name, fallback) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const runs = Number(opt('runs', '3'));
const sizes = opt('sizes', '2000,20000,100000').split(',').map(Number);
const budget = Number(opt('budget', '5000'));
const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'stop-child.mjs');

function stopOnce(home, mode, n) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, mode, String(n), String(budget)], { env: { ...process.env, HERMES_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let t0 = 0;
    child.stdout.on('data', (d) => {
      out += d;
      if (t0 === 0 && out.includes('READY\n')) {
        t0 = performance.now();
        child.kill('SIGTERM');
      }
    });
    child.stderr.resume();
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${mode} ${n}: no exit within 600 s`));
    }, 600_000);
    child.on('close', (code) => {
      clearTimeout(timer);
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
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-bench-stop-'));
const rows = [];
try {
  for (const n of sizes) {
    for (const mode of ['signal', 'exit']) {
      const samples = [];
      for (let r = 0; r < runs; r++) {
        const home = path.join(work, `${mode}-${n}-${r}`);
        const s = await stopOnce(home, mode, n);
        samples.push({ ...s, ...readBack(home) });
        fs.rmSync(home, { recursive: true, force: true });
      }
      rows.push({ n, mode, samples });
      const m = median(samples.map((s) => s.ms));
      process.stderr.write(`${mode} ${n}: ${samples.map((s) => `${s.ms.toFixed(0)} ms`).join(', ')} (median ${m.toFixed(0)} ms)\n`);
    }
  }
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}

const load = os.loadavg().map((l) => l.toFixed(1)).join(' / ');
console.log(`node ${process.version}, ${os.cpus().length} cpus, load average ${load} at the end; budget ${budget} ms; ${runs} runs each, medians`);
console.log('| pending | stop path | stop time (median) | runs | on disk (every run) | in a batch file (median) | temps left (max) | exit status |');
console.log('|---|---|---|---|---|---|---|---|');
for (const { n, mode, samples } of rows) {
  const lost = samples.map((s) => n - s.onDisk);
  console.log(
    `| ${n.toLocaleString('en-US')} | ${mode === 'signal' ? 'SIGTERM (hook)' : 'process.exit()'} | ${(median(samples.map((s) => s.ms)) / 1000).toFixed(2)} s | ` +
      `${samples.map((s) => (s.ms / 1000).toFixed(2)).join(', ')} s | ${lost.every((l) => l === 0) ? `${n.toLocaleString('en-US')} of ${n.toLocaleString('en-US')}` : `LOST ${lost.join(', ')}`} | ` +
      `${median(samples.map((s) => s.hook?.inBatch ?? 0)).toLocaleString('en-US')} | ${Math.max(...samples.map((s) => s.temps))} | ${[...new Set(samples.map((s) => s.code))].join(', ')} |`,
  );
}
