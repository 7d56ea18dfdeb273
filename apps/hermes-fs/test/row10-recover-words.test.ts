/**
 * `pending recover` says what it did with the files it recovered: a file it could not remove is never called
 * removed. 300 payloads of uid 65534 in a spool directory only root may write (uid 65534 reads them, commits
 * them, and cannot unlink them: EACCES), recovered twice as uid 65534.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { describeNeeds } from '@hermes/test-utils';
import { afterAll, expect, it } from 'vitest';
import { cleanupHomes, cli, freshHome } from './helpers.js';

const NOBODY = 65534;
const FILES = 300;

afterAll(cleanupHomes);

describeNeeds(['root'], 'row 10: hermes-fs pending recover when the spool refuses the removal (uid 65534, EACCES)', () => {
  it('the second pass says "could not remove 300" with the errno, never "removed"', () => {
    const home = freshHome();
    fs.mkdirSync(home, { mode: 0o777 });
    fs.chmodSync(home, 0o777);
    const db = openSessionDb({ home });
    db.createSession({ id: 'sess-w', source: 'telegram', sessionKey: 'agent:main:telegram:dm:w', startedAt: 1700000000 });
    db.close();
    fs.chownSync(path.join(home, 'state.db'), NOBODY, NOBODY);
    const dir = path.join(home, 'pending_messages');
    fs.mkdirSync(dir, { mode: 0o755 });
    fs.chmodSync(dir, 0o755); // root's directory: uid 65534 may read the files, not remove them
    for (let i = 0; i < FILES; i++) {
      const file = path.join(dir, `pending-${i.toString(16).padStart(32, '0')}.json`);
      const payload = { schema_version: 1, kind: 'overflow', session_key: 'agent:main:telegram:dm:w', ts: 1700000001 + i * 0.001, seq: i, data: { text: `w-${String(i)}`, session_id: 'sess-w' } };
      fs.writeFileSync(file, JSON.stringify(payload), { mode: 0o600 });
      fs.chownSync(file, NOBODY, NOBODY);
    }
    const first = cli(['pending', 'recover', '--home', home], { uid: NOBODY, gid: NOBODY });
    const second = cli(['pending', 'recover', '--home', home], { uid: NOBODY, gid: NOBODY });
    const head = (out: string): string[] => out.split('\n').slice(0, 3);
    console.log(`row10 removed: first pass ${JSON.stringify(head(first.stdout))}; second pass ${JSON.stringify(head(second.stdout))}; ${String(fs.readdirSync(dir).length)} file(s) left`);
    expect([first.status, second.status]).toEqual([1, 1]);
    expect(head(first.stdout)).toEqual([
      `recovered 300 of 300 spool files into ${home}/state.db`,
      `  could not remove 300 recovered files (EACCES at ${dir}): the next recovery removes them without inserting them again`,
      `  kept pending-${'0'.repeat(32)}.json (not-removed): recovered (receipt committed) but not removed: EACCES: permission denied, unlink '${dir}/pending-${'0'.repeat(32)}.json'`,
    ]);
    expect(head(second.stdout)).toEqual([
      `recovered 0 of 300 spool files into ${home}/state.db`,
      '  300 files committed by an earlier pass (receipt found): 0 removed, could not remove 300, nothing duplicated',
      `  could not remove 300 recovered files (EACCES at ${dir}): the next recovery removes them without inserting them again`,
    ]);
    expect(second.stdout).not.toMatch(/: removed, nothing duplicated/);
    expect(fs.readdirSync(dir)).toHaveLength(FILES);
  });
});
