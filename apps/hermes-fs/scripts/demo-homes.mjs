#!/usr/bin/env node
// Seeds the two demo homes the README and docs/operators.md show `hermes-fs doctor` on:
//   <root>/hermes-demo/.hermes   an unmanaged home written by the real packages, then loosened the way an
//                                older Hermes left homes (0755 dirs, 0644 transcripts and .env, a leftover
//                                temp file, a dangling link, a .bad payload and an agent-history snapshot);
//   <root>/hermes-nixos/.hermes  a managed home (.managed marker, 2770 dirs) whose directories an old
//                                runtime forced to 0700.
// Usage: node apps/hermes-fs/scripts/demo-homes.mjs [root=/tmp]   (build first: pnpm build)
// The loosening below is the point of the demo, so this script sets modes directly; it is not shipped.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { saveConversation } from '@hermes/cli';
import { loadEnvironment, setLogger, silentLogger } from '@hermes/fs-policy';
import { flushAgentHistory, flushPending } from '@hermes/gateway';
import { createMoaTracer } from '@hermes/moa-trace';
import { openSessionDb } from '@hermes/session-db';

setLogger(silentLogger);
const root = path.resolve(process.argv[2] ?? '/tmp');

async function seed(home, env) {
  const db = openSessionDb({ home, env });
  db.createSession({ id: 'seed-session-1', source: 'telegram', model: 'hermes-4', sessionKey: 'agent:main:telegram:dm:42' });
  db.appendMessage({ sessionId: 'seed-session-1', role: 'user', content: 'hello' });
  db.close();
  await flushPending({ 'agent:main:telegram:dm:42': { text: 'are you there?', session_id: 'seed-session-1' } }, { home, env });
  await flushAgentHistory('seed-session-1', [{ role: 'user', content: 'hello' }], { home, env });
  const tracer = createMoaTracer({ home, env, saveTraces: true });
  const rec = await tracer.record({
    sessionId: 'seed-session-1',
    preset: 'demo',
    references: [{ label: 'a', model: 'ref-model', provider: 'local', inputMessages: [{ role: 'user', content: 'hello' }], output: 'draft' }],
    aggregator: { label: 'agg', model: 'hermes-4', provider: 'local', inputMessages: [{ role: 'user', content: 'hello' }], output: 'final', streamed: false },
  });
  if (!rec.written) throw new Error(`trace not written: ${String(rec.error)}`);
  await saveConversation({ model: 'hermes-4', messages: [{ role: 'user', content: 'hello' }] }, { home, env, format: 'json' });
}

// Unmanaged, loosened.
const demo = path.join(root, 'hermes-demo', '.hermes');
fs.rmSync(path.dirname(demo), { recursive: true, force: true });
fs.mkdirSync(path.dirname(demo), { recursive: true });
const env1 = loadEnvironment({ home: demo, env: { HERMES_MANAGED: 'false' } });
await seed(demo, env1);
fs.chmodSync(demo, 0o755);
fs.chmodSync(path.join(demo, 'moa-traces'), 0o755);
for (const f of fs.readdirSync(path.join(demo, 'moa-traces'))) fs.chmodSync(path.join(demo, 'moa-traces', f), 0o644);
for (const f of fs.readdirSync(path.join(demo, 'sessions', 'saved'))) fs.chmodSync(path.join(demo, 'sessions', 'saved', f), 0o644);
fs.writeFileSync(path.join(demo, '.env'), 'OPENAI_API_KEY=sk-demo\n', { mode: 0o644 });
fs.chmodSync(path.join(demo, '.env'), 0o644);
fs.writeFileSync(path.join(demo, 'pending_messages', `.pending-0d5e.json.4194305-${fs.readlinkSync('/proc/self/ns/pid').replace(/^pid:\[(\d+)\]$/, '$1')}.9f1c2b3a4d5e.tmp`), '', { mode: 0o600 });
fs.writeFileSync(path.join(demo, 'pending_messages', 'pending-00000000000000000000000000000bad.json.bad'), '{"schema_version":1}', { mode: 0o600 });
fs.symlinkSync('/srv/shared-exports', path.join(demo, 'sessions', 'exports'));

// Managed, with directories a legacy runtime forced to 0700.
const nixos = path.join(root, 'hermes-nixos', '.hermes');
fs.rmSync(path.dirname(nixos), { recursive: true, force: true });
fs.mkdirSync(nixos, { recursive: true });
for (const d of ['', 'cron', 'sessions', 'logs', 'memories']) {
  fs.mkdirSync(path.join(nixos, d), { recursive: true });
  fs.chmodSync(path.join(nixos, d), 0o2770);
}
fs.writeFileSync(path.join(nixos, '.managed'), 'nixos\n', { mode: 0o644 });
const env2 = loadEnvironment({ home: nixos, env: {}, umask: 0o007 });
await seed(nixos, env2);
for (const d of ['', 'pending_messages', 'moa-traces', 'sessions/saved']) fs.chmodSync(path.join(nixos, d), 0o700);
console.log(`${demo}\n${nixos}`);
