/** `hermes-fs doctor --fix` on an unmanaged home with modes too wide and a stale temp file. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runDoctor } from 'hermes-fs';
import type { Scenario } from '../scenario.js';
import { entries, type Tree } from '../tree.js';
import { HOME, modeText } from './util.js';

const STALE_TEMP = `${HOME}/sessions/.state.json.4194000.0123456789ab.tmp`;

function indexOf(t: Tree): Map<string, { mode: number; data: Buffer | undefined }> {
  return new Map(entries(t).map((e) => [e.rel, { mode: e.node.mode, data: e.node.kind === 'file' ? e.node.data : undefined }]));
}

export function doctorScenario(): Scenario {
  return {
    protocol: 'hermes-fs doctor --fix',
    form: 'async',
    promise: 'no entry has a permission bit it did not have before the fix; no content changes; nothing but the stale temp file disappears',
    setup(root) {
      const home = path.join(root, HOME);
      fs.mkdirSync(home, { mode: 0o700 });
      fs.mkdirSync(path.join(home, 'sessions'));
      fs.chmodSync(path.join(home, 'sessions'), 0o755);
      fs.mkdirSync(path.join(home, 'pending_messages'), { mode: 0o700 });
      const payload = path.join(home, 'pending_messages', 'pending-0123456789abcdef0123456789abcdef.json');
      fs.writeFileSync(payload, `${JSON.stringify({ schema_version: 1, kind: 'pending', ts: 1767225600, seq: 1, session_key: 'telegram:1', reason: 'shutdown', data: { text: 'hello' } })}\n`);
      fs.chmodSync(payload, 0o644);
      fs.writeFileSync(path.join(home, '.env'), 'OPENAI_API_KEY=sk-test\n');
      fs.chmodSync(path.join(home, '.env'), 0o644);
      fs.writeFileSync(path.join(root, STALE_TEMP), '{"half":');
      const old = new Date(Date.now() - 7 * 24 * 3600 * 1000);
      fs.utimesSync(path.join(root, STALE_TEMP), old, old);
    },
    async run(root, rec) {
      const report = await runDoctor({ home: path.join(root, HOME), fix: true, dryRun: false, env: {}, managed: false });
      const changed = report.fix.changes.filter((c) => c.action === 'changed' || c.action === 'removed').length;
      if (changed === 0) throw new Error('the doctor changed nothing: the scenario no longer exercises --fix');
      rec.mark(`doctor --fix returned: ${String(changed)} change(s)`);
    },
    check({ dir, state, recording }) {
      const out: string[] = [];
      const before = indexOf(recording.initial);
      const now = indexOf(state.tree);
      for (const [rel, b] of before) {
        const n = now.get(rel);
        if (n === undefined) {
          if (rel !== STALE_TEMP) out.push(`${rel} disappeared`);
          continue;
        }
        const extra = n.mode & ~b.mode;
        if (extra !== 0) out.push(`${rel} has mode ${modeText(n.mode)}, wider than ${modeText(b.mode)} before the fix (bits ${modeText(extra)})`);
        if (b.data !== undefined && n.data?.equals(b.data) !== true) out.push(`${rel} changed content`);
      }
      for (const rel of now.keys()) if (!before.has(rel)) out.push(`${rel} appeared`);
      // The state on disk must be what the model says (the check reads the model tree; make sure it was written).
      if (!fs.existsSync(path.join(dir, HOME))) out.push(`${HOME} is missing`);
      return out;
    },
  };
}
