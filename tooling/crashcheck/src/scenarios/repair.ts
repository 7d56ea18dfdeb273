/**
 * The repairs: `hermes-fs doctor --fix` on an unmanaged home with modes too wide and a stale temp file, and the
 * fs-policy primitives it is built on (reconcileDir/reconcileFile, sweepTempFiles) in their sync and async
 * forms. None of them promises durability; all promise never to widen a mode or touch content.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { reconcileDir, reconcileDirSync, reconcileFile, reconcileFileSync, sweepTempFiles, sweepTempFilesSync } from '@hermes/fs-policy';
import { runDoctor } from 'hermes-fs';
import type { CheckContext, Scenario } from '../scenario.js';
import { entries, type Tree } from '../tree.js';
import { envFor, HOME, modeText } from './util.js';

const STALE_TEMP = `${HOME}/sessions/.state.json.4194000.0123456789ab.tmp`;
const PAYLOAD = `${HOME}/pending_messages/pending-0123456789abcdef0123456789abcdef.json`;
const DOTENV = `${HOME}/.env`;

/** A home whose modes are too wide, with a stale temp file left by a dead writer. */
function untidyHome(root: string): void {
  const home = path.join(root, HOME);
  fs.mkdirSync(home, { mode: 0o700 });
  fs.mkdirSync(path.join(home, 'sessions'));
  fs.chmodSync(path.join(home, 'sessions'), 0o755);
  fs.mkdirSync(path.join(home, 'pending_messages'), { mode: 0o700 });
  fs.writeFileSync(
    path.join(root, PAYLOAD),
    `${JSON.stringify({ schema_version: 1, kind: 'pending', ts: 1767225600, seq: 1, session_key: 'telegram:1', reason: 'shutdown', data: { text: 'hello' } })}\n`,
  );
  fs.chmodSync(path.join(root, PAYLOAD), 0o644);
  fs.writeFileSync(path.join(root, DOTENV), 'OPENAI_API_KEY=sk-test\n');
  fs.chmodSync(path.join(root, DOTENV), 0o644);
  fs.writeFileSync(path.join(root, STALE_TEMP), '{"half":');
  const old = new Date(Date.now() - 7 * 24 * 3600 * 1000);
  fs.utimesSync(path.join(root, STALE_TEMP), old, old);
}

function indexOf(t: Tree): Map<string, { mode: number; data: Buffer | undefined }> {
  return new Map(entries(t).map((e) => [e.rel, { mode: e.node.mode, data: e.node.kind === 'file' ? e.node.data : undefined }]));
}

/** No entry gains a permission bit, no content changes, nothing appears, only `removable` may disappear. */
function checkNoWidening({ state, recording }: CheckContext, removable: readonly string[]): string[] {
  const out: string[] = [];
  const before = indexOf(recording.initial);
  const now = indexOf(state.tree);
  for (const [rel, b] of before) {
    const n = now.get(rel);
    if (n === undefined) {
      if (!removable.includes(rel)) out.push(`${rel} disappeared`);
      continue;
    }
    const extra = n.mode & ~b.mode;
    if (extra !== 0) out.push(`${rel} has mode ${modeText(n.mode)}, wider than ${modeText(b.mode)} before the fix (bits ${modeText(extra)})`);
    if (b.data !== undefined && n.data?.equals(b.data) !== true) out.push(`${rel} changed content`);
  }
  for (const rel of now.keys()) if (!before.has(rel)) out.push(`${rel} appeared`);
  return out;
}

export function doctorScenario(): Scenario {
  return {
    protocol: 'hermes-fs doctor --fix',
    form: 'async',
    promise: 'no entry has a permission bit it did not have before the fix; no content changes; nothing but the stale temp file disappears',
    setup: untidyHome,
    async run(root, rec) {
      const report = await runDoctor({ home: path.join(root, HOME), fix: true, dryRun: false, env: {}, managed: false });
      const changed = report.fix.changes.filter((c) => c.action === 'changed' || c.action === 'removed').length;
      if (changed !== 4) throw new Error(`the doctor made ${String(changed)} change(s), not the 4 the scenario sets up (3 modes, 1 temp file)`);
      rec.mark(`doctor --fix returned: ${String(changed)} changes`);
    },
    check: (ctx) => checkNoWidening(ctx, [STALE_TEMP]),
  };
}

function reconcileScenario(form: 'sync' | 'async'): Scenario {
  return {
    protocol: 'reconcileDir + reconcileFile',
    form,
    promise: 'no entry has a permission bit it did not have before; no content changes',
    setup: untidyHome,
    async run(root) {
      const env = envFor(root);
      const dir = path.join(root, HOME, 'sessions');
      const files: [string, 'pending-messages' | 'secrets'][] = [
        [path.join(root, PAYLOAD), 'pending-messages'],
        [path.join(root, DOTENV), 'secrets'],
      ];
      const results =
        form === 'sync'
          ? [reconcileDirSync(dir, 'sessions', { env }), ...files.map(([f, k]) => reconcileFileSync(f, k, { env }))]
          : [await reconcileDir(dir, 'sessions', { env }), ...(await Promise.all(files.map(([f, k]) => reconcileFile(f, k, { env }))))];
      const changed = results.filter((r) => r.action === 'changed').length;
      if (changed !== 3) throw new Error(`reconcile changed ${String(changed)} entries, not the 3 the scenario sets up`);
    },
    check: (ctx) => checkNoWidening(ctx, []),
    mutations: [
      {
        name: 'chmod-widens',
        description: 'every chmod sets 0777 instead of the mode policy asks for',
        rewrite: (req) => (req.op === 'fchmod' || req.op === 'chmod' ? { ...req, args: [req.args[0], 0o777] } : req),
      },
    ],
  };
}

function sweepScenario(form: 'sync' | 'async'): Scenario {
  return {
    protocol: 'sweepTempFiles (remove)',
    form,
    promise: 'only the stale temp file disappears; no mode widens, no content changes',
    setup: untidyHome,
    async run(root) {
      const home = path.join(root, HOME);
      const r = form === 'sync' ? sweepTempFilesSync(home, { remove: true }) : await sweepTempFiles(home, { remove: true });
      if (r.removed.length !== 1) throw new Error(`the sweep removed ${String(r.removed.length)} files, not the 1 stale temp file`);
    },
    check: (ctx) => checkNoWidening(ctx, [STALE_TEMP]),
  };
}

export function repairScenarios(): Scenario[] {
  return [reconcileScenario('sync'), reconcileScenario('async'), sweepScenario('sync'), sweepScenario('async'), doctorScenario()];
}
