import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeNeeds, lastJson, runNode, tempRoot } from '@hermes/test-utils';
import { afterEach, expect, it } from 'vitest';
import { openSessionDb } from '../src/index.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/open-fail.mjs', import.meta.url));
const NOBODY = 65534;

interface Failure {
  ok: boolean;
  name?: string;
  code?: string;
  path?: string;
  uid?: number;
  message?: string;
  hint?: string;
  line?: string;
}

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true });
});

/**
 * A home holding a state.db made by root, then given to uid 65534 with `fileMode` (its own file: the owner
 * check passes, the mode is what stops it), in a directory of `dirMode`.
 */
function homeWithDb(fileMode: number, dirMode: number): { home: string; file: string } {
  const root = tempRoot('hermes-sdb-err-');
  roots.push(root);
  const home = path.join(root, 'home');
  fs.mkdirSync(home);
  openSessionDb({ home }).close();
  const file = path.join(home, 'state.db');
  fs.chownSync(file, NOBODY, NOBODY);
  fs.chmodSync(file, fileMode);
  fs.chmodSync(home, dirMode);
  return { home, file };
}

describeNeeds(['root'], 'a database another uid cannot use: one line naming state.db, the uid and the fix', () => {
  it('SQLITE_CANTOPEN: a 0000 state.db of uid 65534, opened by uid 65534', () => {
    const { home, file } = homeWithDb(0o000, 0o777);
    const r = lastJson<Failure>(runNode(FIXTURE, [], { env: { HERMES_HOME: home }, uid: NOBODY, gid: NOBODY }));
    expect(r).toMatchObject({ ok: false, name: 'SessionDbError', code: 'SQLITE_CANTOPEN', path: file, uid: NOBODY });
    expect(r.message).toBe(`cannot open ${file}: unable to open database file; state.db is owned by uid 65534 gid 65534, mode 0000`);
    expect(r.line).toBe(`SQLITE_CANTOPEN at ${file} (uid ${NOBODY}): ${r.message ?? ''} — fix: ${r.hint ?? ''}`);
    expect(r.hint).toContain(`uid ${NOBODY} (gid ${NOBODY}) cannot open ${file}`);
  });

  it('SQLITE_READONLY: a 0444 state.db of uid 65534 in a world-writable directory', () => {
    const { home, file } = homeWithDb(0o444, 0o777);
    const r = lastJson<Failure>(runNode(FIXTURE, [], { env: { HERMES_HOME: home }, uid: NOBODY, gid: NOBODY }));
    expect(r).toMatchObject({ ok: false, name: 'SessionDbError', code: 'SQLITE_READONLY', path: file, uid: NOBODY });
    expect(r.message).toContain('attempt to write a readonly database; state.db is owned by uid 65534 gid 65534, mode 0444');
    expect(r.hint).toContain(`${file} (or its -wal/-shm, or the directory holding them) is not writable by uid ${NOBODY}`);
    expect(r.hint).toContain('hermes-fs doctor --fix');
  });
});
