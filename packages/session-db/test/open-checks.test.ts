/**
 * Row 1 of issue #23, one refusal at a time: what `openSessionDb` refuses before SQLite sees state.db (or its
 * -wal/-shm), writable and read-only, each in a child process under a timeout; and the check after SQLite's
 * open, which catches a file replaced between the check and the open.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { FsPolicyError, holdDatabaseFileSync, loadEnvironment, setLogger, silentLogger } from '@hermes/fs-policy';
import { describeNeeds, lastJson, runNode, tempRoot } from '@hermes/test-utils';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/index.js';

const CHILD = fileURLToPath(new URL('./fixtures/open-once.mjs', import.meta.url));
const FIFO_AFTER_CHECK = fileURLToPath(new URL('./fixtures/fifo-after-check.mjs', import.meta.url));

interface Outcome {
  ok: boolean;
  name?: string | null;
  code?: string | null;
}

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true });
});
beforeAll(() => {
  setLogger(silentLogger);
});
afterAll(() => {
  setLogger(undefined);
});

/** A home with a state.db holding one session, and another home's state.db outside it (what links point at). */
function layout(): { home: string; db: string; outside: string; outsideDb: string } {
  const root = tempRoot('hermes-sdb-open-');
  roots.push(root);
  const home = path.join(root, 'home');
  const outside = path.join(root, 'outside');
  fs.mkdirSync(home, { mode: 0o700 });
  fs.mkdirSync(outside, { mode: 0o700 });
  for (const h of [home, outside]) {
    const db = openSessionDb({ home: h });
    db.createSession({ id: 's', source: 'cli', startedAt: 1700000000 });
    db.close();
  }
  return { home, db: path.join(home, 'state.db'), outside, outsideDb: path.join(outside, 'state.db') };
}

function open(home: string, mode: 'rw' | 'ro'): Outcome {
  // A hang (SQLite, or a check, blocking on a FIFO) is killed by the timeout and fails the parse below.
  return lastJson<Outcome>(runNode(CHILD, [home, mode], { timeoutMs: 15_000 }));
}

function fingerprint(file: string): string {
  const st = fs.statSync(file);
  return `${String(st.size)} ${String(st.mtimeMs)} ${fs.readFileSync(file).toString('base64')}`;
}

describe.each(['rw', 'ro'] as const)('row 1: state.db refused before SQLite sees it (%s)', (mode) => {
  it(`row 1 (${mode}): state.db a symbolic link to another database -> ESYMLINK, the target untouched`, () => {
    const l = layout();
    const before = fingerprint(l.outsideDb);
    fs.rmSync(l.db);
    fs.symlinkSync(l.outsideDb, l.db);
    expect(open(l.home, mode)).toEqual({ ok: false, name: 'FsPolicyError', code: 'ESYMLINK' });
    expect(fingerprint(l.outsideDb)).toBe(before);
    expect(fs.readdirSync(l.outside).sort()).toEqual(['state.db']);
  });

  it(`row 1 (${mode}): state.db a FIFO -> ENOTREGULAR at once, never a hang`, () => {
    const l = layout();
    fs.rmSync(l.db);
    execFileSync('mkfifo', [l.db]);
    const started = Date.now();
    expect(open(l.home, mode)).toEqual({ ok: false, name: 'FsPolicyError', code: 'ENOTREGULAR' });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it(`row 1 (${mode}): state.db with a second name -> EHARDLINK`, () => {
    const l = layout();
    fs.linkSync(l.db, path.join(l.home, 'copy.db'));
    expect(open(l.home, mode)).toEqual({ ok: false, name: 'FsPolicyError', code: 'EHARDLINK' });
  });

  it(`row 1 (${mode}): state.db-wal a symbolic link out of the home -> ESYMLINK, nothing created outside`, () => {
    const l = layout();
    fs.symlinkSync(path.join(l.outside, 'planted-wal'), `${l.db}-wal`);
    expect(open(l.home, mode)).toEqual({ ok: false, name: 'FsPolicyError', code: 'ESYMLINK' });
    expect(fs.readdirSync(l.outside).sort()).toEqual(['state.db']);
  });

  it(`row 1 (${mode}): state.db-shm a FIFO -> ENOTREGULAR, never a hang`, () => {
    const l = layout();
    execFileSync('mkfifo', [`${l.db}-shm`]);
    expect(open(l.home, mode)).toEqual({ ok: false, name: 'FsPolicyError', code: 'ENOTREGULAR' });
  });

  it(`row 1 (${mode}): state.db-wal with a second name -> EHARDLINK`, () => {
    const l = layout();
    fs.writeFileSync(`${l.db}-wal`, '', { mode: 0o600 });
    fs.linkSync(`${l.db}-wal`, path.join(l.home, 'wal-copy'));
    expect(open(l.home, mode)).toEqual({ ok: false, name: 'FsPolicyError', code: 'EHARDLINK' });
  });

  it(`row 1 (${mode}): a plain state.db opens`, () => {
    const l = layout();
    expect(open(l.home, mode)).toEqual({ ok: true });
  });
});

describeNeeds(['root'], 'row 1: a state.db of another uid', () => {
  it.each(['rw', 'ro'] as const)('row 1 (%s): state.db owned by uid 65534 in root\'s home -> EFOREIGN_OWNER', (mode) => {
    const l = layout();
    fs.chownSync(l.db, 65534, 65534);
    expect(open(l.home, mode)).toEqual({ ok: false, name: 'FsPolicyError', code: 'EFOREIGN_OWNER' });
  });

  it.each(['rw', 'ro'] as const)('row 1 (%s): state.db-wal owned by uid 65534 -> EFOREIGN_OWNER', (mode) => {
    const l = layout();
    fs.writeFileSync(`${l.db}-wal`, '', { mode: 0o600 });
    fs.chownSync(`${l.db}-wal`, 65534, 65534);
    expect(open(l.home, mode)).toEqual({ ok: false, name: 'FsPolicyError', code: 'EFOREIGN_OWNER' });
  });
});

describeNeeds(['root', 'linux', 'unshare', 'mount'], 'row 1: without /proc/self/fd (fallback mode) the check after the open is impossible', () => {
  /** Runs the child with /proc masked (a tmpfs over it in a private mount namespace), as `uid`. */
  function openMasked(home: string, mode: 'rw' | 'ro', uid: number): Outcome {
    const as = uid === 0 ? '' : `setpriv --reuid=${String(uid)} --regid=${String(uid)} --clear-groups `;
    const r = spawnSync('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', `mount -t tmpfs none /proc && exec ${as}"$0" "$@"`, process.execPath, CHILD, home, mode], {
      encoding: 'utf8',
      timeout: 15_000,
      env: { PATH: process.env.PATH },
    });
    return lastJson<Outcome>({ status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr });
  }

  it.each(['rw', 'ro'] as const)('row 1 (fallback, %s): root is refused with EUNSAFE_FALLBACK; the home owner in a home only it can write opens', (mode) => {
    const l = layout();
    expect(openMasked(l.home, mode, 0)).toEqual({ ok: false, name: 'FsPolicyError', code: 'EUNSAFE_FALLBACK' });
    fs.chmodSync(path.dirname(l.home), 0o755);
    execFileSync('chown', ['-R', '65534:65534', l.home]);
    expect(openMasked(l.home, mode, 65534)).toEqual({ ok: true });
  });
});

describe('row 1: the check after SQLite opened the file', () => {
  /** Holds state.db as openSessionDb does, lets `swap` replace it, then lets SQLite open the held name. */
  function openAfterSwap(l: ReturnType<typeof layout>, swap: () => void): { err: unknown; opened: boolean } {
    const held = holdDatabaseFileSync(l.db, { env: loadEnvironment({ home: l.home }) });
    swap();
    const before = held.snapshot();
    const db = new Database(held.libraryPath, { fileMustExist: true });
    try {
      held.verifyOpened(before, (db.pragma('database_list') as { name: string; file: string }[])[0]?.file);
      return { err: undefined, opened: true };
    } catch (err) {
      return { err, opened: false };
    } finally {
      db.close();
      held.close();
    }
  }

  it('row 1: state.db replaced by another regular file between the check and the open -> ERACE', () => {
    const l = layout();
    const before = fingerprint(l.outsideDb);
    const r = openAfterSwap(l, () => {
      fs.copyFileSync(l.outsideDb, path.join(l.home, 'other.db'));
      fs.renameSync(path.join(l.home, 'other.db'), l.db);
    });
    expect(r.opened).toBe(false);
    expect(r.err).toBeInstanceOf(FsPolicyError);
    expect((r.err as FsPolicyError).code).toBe('ERACE');
    expect(fingerprint(l.outsideDb)).toBe(before);
  });

  it('row 1: state.db replaced by a symbolic link between the check and the open -> ERACE, the target untouched', () => {
    const l = layout();
    const before = fingerprint(l.outsideDb);
    const r = openAfterSwap(l, () => {
      fs.renameSync(l.db, path.join(l.home, 'aside.db'));
      fs.symlinkSync(l.outsideDb, l.db);
    });
    expect(r.opened).toBe(false);
    expect((r.err as FsPolicyError).code).toBe('ERACE');
    expect(fingerprint(l.outsideDb)).toBe(before);
    expect(fs.readdirSync(l.outside).sort()).toEqual(['state.db']);
  });

  it('row 1: a FIFO renamed into place after the check: SQLite\'s blocking open is completed by the watchdog and fails, no hang', () => {
    const l = layout();
    // Without the watchdog SQLite's O_RDONLY open waits for a writer forever: the child is killed at 15 s.
    const r = lastJson<{ opened: boolean; code?: string; unblocked: number; ms: number }>(runNode(FIFO_AFTER_CHECK, [l.home], { timeoutMs: 15_000 }));
    console.log(`row 1: FIFO after the check: opened ${String(r.opened)}, code ${String(r.code)}, watchdog completions ${String(r.unblocked)}, ${String(r.ms)} ms`);
    expect(r).toMatchObject({ opened: false, code: 'SQLITE_IOERR_READ', unblocked: 1 });
    expect(r.ms).toBeLessThan(5_000);
  });

  it('row 1: nothing swapped -> verified', () => {
    const l = layout();
    expect(openAfterSwap(l, () => undefined)).toEqual({ err: undefined, opened: true });
  });

  it('row 1: a descriptor SQLite pooled for this process (three connections, the middle one closed) is accepted', () => {
    const l = layout();
    const a = openSessionDb({ home: l.home });
    const b = openSessionDb({ home: l.home });
    b.close(); // a holds locks: SQLite keeps b's descriptor for the next open of the inode
    const c = openSessionDb({ home: l.home });
    c.appendMessage({ sessionId: 's', role: 'user', content: 'through a reused descriptor', timestamp: 1700000002 });
    expect(a.exportSession('s')?.messages.map((m) => m.content)).toEqual(['through a reused descriptor']);
    const d = openSessionDb({ home: l.home, readonly: true });
    expect(d.getSession('s')?.message_count).toBe(1);
    d.close();
    c.close();
    a.close();
  });
});
