// The project's side of the Python peer case (cases-peer.mjs), one job per fresh process:
//   node peer-child.mjs <job> <home> <count> <data.json>
// Loads the packages and the shared data, then times the job alone (performance.now() around the loop) and prints
// {"ms": …, "maxRssKiB": …} (VmHWM). Jobs: atomic-file, atomic-dir, append, flush (see cases-peer.mjs).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { atomicWriteJsonSync, loadEnvironment, privateAppendSync, setLogger, silentLogger } from '../../packages/fs-policy/dist/index.js';
import { flushOverflow } from '../../packages/gateway/dist/index.js';

setLogger(silentLogger);
const [job, home, countText, dataFile] = process.argv.slice(2);
const count = Number(countText);
const data = JSON.parse(fs.readFileSync(dataFile, 'utf8'));
const env = loadEnvironment({ home, env: { HERMES_MANAGED: 'false' } });
const spool = path.join(home, 'pending_messages');
const trajectories = path.join(home, 'trajectories');
fs.mkdirSync(spool, { recursive: true, mode: 0o700 });
fs.mkdirSync(trajectories, { recursive: true, mode: 0o700 });

let t0;
if (job === 'atomic-file' || job === 'atomic-dir') {
  const target = path.join(spool, 'state.json');
  const durable = job === 'atomic-file' ? { durable: 'file' } : {};
  t0 = performance.now();
  for (let i = 0; i < count; i++) atomicWriteJsonSync(target, data.value, { kind: 'pending-messages', env, ...durable });
} else if (job === 'append') {
  const file = path.join(trajectories, 'lines.jsonl');
  t0 = performance.now();
  for (let i = 0; i < count; i++) privateAppendSync(file, data.line, { kind: 'trajectories', env });
} else if (job === 'flush') {
  const events = data.messages.slice(0, count);
  t0 = performance.now();
  const r = await flushOverflow({ [data.key]: events }, { home });
  if (r.written.length !== count || r.failed.length !== 0) throw new Error(`flush: ${r.written.length} written, ${r.failed.length} failed of ${count}`);
} else {
  throw new Error(`peer-child: unknown job "${job}"`);
}
const ms = performance.now() - t0;
// VmHWM, not getrusage's maxrss: Linux carries maxrss over exec from the forking parent (the bench process).
const hwm = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
process.stdout.write(`${JSON.stringify({ ms, maxRssKiB: hwm === null ? null : Number(hwm[1]) })}\n`);
