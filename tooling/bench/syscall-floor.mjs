#!/usr/bin/env node
// pnpm bench:floor — what B1's and B2's syscall sequences cost in the kernel alone: syscall-floor.c compiled and
// run (no JavaScript, no policy code), next to fs.appendFileSync measured here in the same run. It answers how far
// an implementation of the same protocol could ever get, whatever its language: see BENCHMARKS.md, "What the
// kernel alone costs". Not part of pnpm test or pnpm bench (it needs a C compiler).
//   --only=append|atomic   one of the two (default both)
//   --samples=N            interleaved samples per sequence (default 5; the median is reported)
//   --dir=PATH             where the homes are made (default: a new directory in the OS temp dir, removed after);
//                          put it on the filesystem you want measured (fsync costs differ widely)
//   --json                 print the JSON instead of the table
// Environment: CC (default cc). Exit 1 without a compiler or when a sequence fails, 2 on bad usage.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const APPEND_OPS = 20_000;
const ATOMIC_OPS = 200;

const argv = process.argv.slice(2);
const opt = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const unknown = argv.filter((a) => !/^--(json|only=(append|atomic)|samples=\d+|dir=.+)$/.test(a));
if (unknown.length > 0) {
  console.error(`bench:floor: unknown argument(s) ${unknown.join(' ')} (known: --only=append|atomic --samples=N --dir=PATH --json)`);
  process.exit(2);
}
const samples = Number(opt('samples') ?? 5);
if (!Number.isInteger(samples) || samples < 1 || samples > 99) {
  console.error(`bench:floor: --samples must be an integer from 1 to 99 (got ${opt('samples')})`);
  process.exit(2);
}
const modes = opt('only') === undefined ? ['append', 'atomic'] : [opt('only')];
const here = path.dirname(fileURLToPath(import.meta.url));
const cc = process.env.CC ?? 'cc';

const base = opt('dir') ?? fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-floor-'));
const owned = opt('dir') === undefined;
try {
  const exe = path.join(base, 'syscall-floor');
  const built = spawnSync(cc, ['-O2', '-Wall', '-Wextra', '-Werror', '-o', exe, path.join(here, 'syscall-floor.c')], { encoding: 'utf8' });
  if (built.error !== undefined || built.status !== 0) {
    const fix = built.error !== undefined ? 'Fix: install a C compiler (apt-get install gcc) or set CC' : 'the source must build warning-free';
    const why = built.error !== undefined ? built.error.message : `${built.stderr}`.trim();
    throw new Error(`cannot compile syscall-floor.c with ${cc}: ${why}. ${fix}`);
  }
  const results = [];
  for (const mode of modes) {
    const dir = path.join(base, mode);
    fs.mkdirSync(dir);
    const ops = mode === 'append' ? APPEND_OPS : ATOMIC_OPS;
    // One C sample, then (append) one sample of fs.appendFileSync, the baseline B2 is measured against, in turn:
    // a drift of the machine hits both sides alike.
    const c = { plain: [], protocol: [], held: [] };
    const js = [];
    for (let s = 0; s < samples; s++) {
      const run = path.join(dir, String(s));
      fs.mkdirSync(run);
      const r = spawnSync(exe, [mode, run, String(ops), '1'], { encoding: 'utf8' });
      if (r.error !== undefined || r.status !== 0) {
        const why = r.error !== undefined ? r.error.message : `exit ${String(r.status ?? r.signal)}: ${r.stderr.trim()}`;
        throw new Error(`the ${mode} sequences failed (${why})`);
      }
      const one = JSON.parse(r.stdout);
      for (const k of Object.keys(c)) c[k].push(one[k]);
      if (mode === 'append') js.push(appendFileSample(path.join(run, 'node.jsonl'), ops));
      fs.rmSync(run, { recursive: true, force: true });
    }
    results.push({
      mode,
      ops,
      samples,
      plain: median(c.plain),
      protocol: median(c.protocol),
      held: median(c.held),
      ...(js.length > 0 ? { appendFileSync: median(js) } : {}),
    });
  }
  if (argv.includes('--json')) console.log(JSON.stringify({ node: process.version, kernel: os.release(), dir: base, results }, null, 2));
  else console.log(render(results));
} catch (err) {
  console.error(`bench:floor: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
} finally {
  if (owned) fs.rmSync(base, { recursive: true, force: true });
}

/** ns per call of fs.appendFileSync over `ops` calls on a new file. */
function appendFileSample(file, ops) {
  const line = Buffer.alloc(1024, 0x78);
  line[1023] = 0x0a;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < ops; i++) fs.appendFileSync(file, line);
  return Number(process.hrtime.bigint() - t0) / ops;
}

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

function us(ns) {
  return `${(ns / 1000).toFixed(2)} µs`;
}

function render(rows) {
  const out = [`syscall floors (C, no JavaScript), median of ${samples} samples, ${os.release()}, Node ${process.version}`, ''];
  for (const r of rows) {
    out.push(`${r.mode === 'append' ? 'B2 append, one 1 KiB line per call' : 'B1 atomic write, 4,941 bytes, file + directory fsync'} (${r.ops} ops per sample)`);
    out.push(`  plain     ${us(r.plain).padStart(12)}`);
    out.push(`  protocol  ${us(r.protocol).padStart(12)}   ${(r.protocol / r.plain).toFixed(2)}x plain`);
    out.push(`  held      ${us(r.held).padStart(12)}   ${(r.held / r.plain).toFixed(2)}x plain`);
    if (r.appendFileSync !== undefined) {
      out.push(`  fs.appendFileSync (Node) ${us(r.appendFileSync)}: protocol in C = ${(r.protocol / r.appendFileSync).toFixed(2)}x it, held in C = ${(r.held / r.appendFileSync).toFixed(2)}x it`);
    }
    out.push('');
  }
  return out.join('\n');
}
