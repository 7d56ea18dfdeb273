// P1–P4, the peer case: the project's primitives against the Python reference's patterns, written here inline in
// Python (no reference code). Each sample is a fresh process per side (peer-child.mjs / python3 -c PEER_PY), the
// two sides alternating which goes first; each process loads its code and the shared data first and times the job
// alone. Ratio = TS time ÷ Python time. Skipped, with the reason, when python3 is not on PATH.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { payload4k } from './cases-primitives.mjs';
import { plantedMicros, side } from './harness.mjs';

const CHILD = fileURLToPath(new URL('./peer-child.mjs', import.meta.url));
const KEY = 'agent:main:telegram:dm:1';

/**
 * What each Python job mirrors (argv: job home count data.json):
 * - atomic-file: tempfile.mkstemp in the target's directory, json.dump(indent=2) + newline through os.fdopen,
 *   flush, os.fsync, os.replace — the atomic JSON write with the file fsynced.
 * - atomic-dir: the same, then the directory opened O_RDONLY, os.fsync, closed.
 * - append: per line, open(path, 'a') with a 0600 opener, write, close (the flush of close); no fsync, as the
 *   project's privateAppendSync without `fsync`.
 * - flush: per message, the atomic-file write of its payload to its own pending-*.json, one after another, then
 *   one directory fsync — the same durability flushOverflow claims.
 */
export const PEER_PY = String.raw`
import json, os, re, sys, tempfile, time
job, home, count, data_file = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with open(data_file, encoding='utf-8') as f:
    data = json.load(f)
spool = os.path.join(home, 'pending_messages')
traj = os.path.join(home, 'trajectories')
os.makedirs(spool, mode=0o700, exist_ok=True)
os.makedirs(traj, mode=0o700, exist_ok=True)

def atomic_json_write(target, value, dir_fsync):
    d = os.path.dirname(target)
    fd, tmp = tempfile.mkstemp(dir=d, prefix='.' + os.path.basename(target) + '.', suffix='.tmp')
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            json.dump(value, f, indent=2)
            f.write('\n')
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if dir_fsync:
        dfd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

def private_opener(p, flags):
    return os.open(p, flags, 0o600)

if job in ('atomic-file', 'atomic-dir'):
    target = os.path.join(spool, 'state.json')
    t0 = time.perf_counter()
    for _ in range(count):
        atomic_json_write(target, data['value'], job == 'atomic-dir')
elif job == 'append':
    target = os.path.join(traj, 'lines.jsonl')
    line = data['line']
    t0 = time.perf_counter()
    for _ in range(count):
        with open(target, 'a', encoding='utf-8', opener=private_opener) as f:
            f.write(line)
elif job == 'flush':
    messages = data['messages'][:count]
    t0 = time.perf_counter()
    for i, m in enumerate(messages):
        payload = {'session_key': data['key'], 'reason': 'shutdown', 'ts': m['timestamp'], 'seq': i, 'data': m}
        atomic_json_write(os.path.join(spool, 'pending-%032x.json' % i), payload, False)
    dfd = os.open(spool, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
else:
    raise SystemExit('unknown job ' + job)
ms = (time.perf_counter() - t0) * 1000
with open('/proc/self/status') as f:
    hwm = re.search(r'VmHWM:\s+(\d+) kB', f.read())
print(json.dumps({'ms': ms, 'maxRssKiB': int(hwm.group(1)) if hwm else None}))
`;

/** The python3 on PATH: its version, or why there is none. */
export function findPython() {
  const r = spawnSync('python3', ['-c', 'import sys; print(sys.version.split()[0])'], { encoding: 'utf8' });
  if (r.error) return { ok: false, reason: `python3 is not runnable (${r.error.code ?? r.error.message}): install python3 to run the peer case` };
  if (r.status !== 0) return { ok: false, reason: `python3 exited ${r.status}: ${r.stderr.trim()}` };
  return { ok: true, version: r.stdout.trim() };
}

function runChild(cmd, args, id) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  if (r.error) throw new Error(`${id}: ${cmd} failed to start: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${id}: ${cmd} exited ${r.status}: ${r.stderr.trim()}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

const JOBS = [
  { id: 'P1', job: 'atomic-file', title: 'atomic 4 KiB JSON write, file fsync (peer: Python mkstemp + fsync + os.replace)', unit: 'per write', ops: [100, 200], ours: "atomicWriteJsonSync (durable: 'file')", theirs: 'Python: mkstemp, json.dump, flush, fsync, os.replace' },
  { id: 'P2', job: 'atomic-dir', title: 'atomic 4 KiB JSON write, file + directory fsync (peer)', unit: 'per write', ops: [100, 200], ours: 'atomicWriteJsonSync', theirs: 'Python: the same + directory fsync' },
  { id: 'P3', job: 'append', title: 'append a 1 KiB JSONL line, open per line (peer)', unit: 'per line', ops: [5000, 20000], ours: 'privateAppendSync', theirs: "Python: open('a', 0600), write, close" },
  { id: 'P4', job: 'flush', title: 'shutdown flush of N messages, durable (peer)', unit: 'per flush', ops: [500, 2000], ours: 'flushOverflow', theirs: 'Python: atomic write per message, one dir fsync' },
];

/**
 * The peer rows: P1–P4 (or the ids in `ids`) with ratio = TS ÷ Python (target ≤ 0.8×), or one skipped row, with
 * the reason, when python3 is missing.
 */
export async function peerCases(workRoot, { quick, ids }) {
  const py = findPython();
  if (!py.ok) {
    process.stderr.write(`peer case skipped: ${py.reason}\n`);
    return [{ id: 'P', kind: 'skipped', title: 'peer case against Python', reason: py.reason }];
  }
  fs.mkdirSync(workRoot, { recursive: true });
  const dataFile = path.join(workRoot, 'data.json');
  const maxMessages = Math.max(...JOBS.map((j) => j.ops[1]));
  fs.writeFileSync(
    dataFile,
    JSON.stringify({
      key: KEY,
      value: payload4k(),
      line: `${JSON.stringify({ kind: 'turn', text: 'l'.repeat(1024 - 27) })}\n`,
      messages: Array.from({ length: maxMessages }, (_, i) => ({ text: `message ${i} ${'x'.repeat(200)}`, session_id: 'bench', timestamp: 1_700_000_000 + i * 0.001 })),
    }),
  );
  const pairs = quick ? 3 : 7;
  const results = [];
  let homes = 0;
  for (const j of JOBS.filter((x) => ids === undefined || ids.includes(x.id))) {
    if (plantedMicros(j.id) > 0) throw new Error(`HERMES_BENCH_PLANT cannot reach ${j.id}: the peer case times fresh processes`);
    const count = j.ops[quick ? 0 : 1];
    const perOp = j.job === 'flush' ? 1 : count;
    const ts = [];
    const pyMs = [];
    const rss = { ts: [], py: [] };
    const one = (who) => {
      const home = path.join(workRoot, `h${homes++}`);
      fs.mkdirSync(home, { mode: 0o700 });
      const out = who === 'ts'
        ? runChild(process.execPath, [CHILD, j.job, home, String(count), dataFile], j.id)
        : runChild('python3', ['-c', PEER_PY, j.job, home, String(count), dataFile], j.id);
      fs.rmSync(home, { recursive: true, force: true });
      (who === 'ts' ? ts : pyMs).push(out.ms / perOp);
      rss[who].push(out.maxRssKiB / 1024);
    };
    one('ts'); // warm-up pair: the page cache, the packages' files
    one('py');
    ts.length = 0; pyMs.length = 0; rss.ts.length = 0; rss.py.length = 0;
    for (let i = 0; i < pairs; i++) {
      const order = i % 2 === 0 ? ['ts', 'py'] : ['py', 'ts'];
      for (const who of order) one(who);
    }
    const ours = side(j.ours, ts, { samples: ts });
    const theirs = side(j.theirs, pyMs, { samples: pyMs });
    results.push({
      id: j.id,
      title: j.job === 'flush' ? j.title.replace('N', count.toLocaleString('en-US')) : j.title,
      target: { op: '<=', ratio: 0.8 },
      unit: j.unit,
      noise: j.job === 'append' ? 'cpu' : 'fsync',
      peer: { python: py.version, count, pairs },
      ours,
      baseline: theirs,
      ratio: ours.medianMs / theirs.medianMs,
      notes: [`peak RSS (VmHWM) of the whole process: TS ${side('', rss.ts).medianMs.toFixed(0)} MiB, Python ${side('', rss.py).medianMs.toFixed(0)} MiB`],
    });
  }
  return results;
}
