import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { describeNeeds, modeOf, tempRoot } from '@hermes/test-utils';
import { setFaultHook } from '../src/internal/io.js';
import { checkHomeChainSync, reconcileFileSync, scanTreeSync, setLogger, silentLogger, type ScanEntry } from '../src/index.js';
import { caught, tempEnv } from './helpers.js';

setLogger(silentLogger);
afterEach(() => {
  setFaultHook(undefined);
});

function collect(root: string): { seen: string[]; result: ReturnType<typeof scanTreeSync> } {
  const seen: string[] = [];
  const tag = (kind: string) => (e: ScanEntry) => {
    seen.push(`${kind} ${e.rel}${e.linkText === undefined ? '' : ` -> ${e.linkText}`}`);
  };
  const result = scanTreeSync(root, {
    directory: (e) => {
      tag('dir')(e);
      return true;
    },
    file: tag('file'),
    symlink: tag('link'),
    other: tag('other'),
  });
  return { seen, result };
}

describe('scanTreeSync: an audit walk through descriptors', () => {
  it('visits every entry in name order, reports links with their text and never follows them, never opens a FIFO', () => {
    const root = path.join(tempRoot(), 'home');
    fs.mkdirSync(path.join(root, 'b', 'c'), { recursive: true });
    fs.writeFileSync(path.join(root, 'a.txt'), 'a');
    fs.writeFileSync(path.join(root, 'b', 'c', 'd.json'), '{}');
    fs.symlinkSync('/etc', path.join(root, 'b', 'etc-link'));
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    const { seen, result } = collect(root);
    expect(seen).toEqual(['dir ', 'file a.txt', 'dir b', 'other pipe', 'dir b/c', 'link b/etc-link -> /etc', 'file b/c/d.json']);
    expect(result.errors).toEqual([]);
    expect(result.realPath).toBe(fs.realpathSync(root));
    expect(result.root.ino).toBe(fs.statSync(root).ino);
  });

  it('a directory swapped for a link between its lstat and its opening is not entered (ERACE)', () => {
    const root = path.join(tempRoot(), 'home');
    fs.mkdirSync(path.join(root, 'sub'), { recursive: true });
    const outside = tempRoot();
    fs.writeFileSync(path.join(outside, 'secret'), 's');
    let swapped = false;
    setFaultHook((req) => {
      if (!swapped && req.op === 'open' && req.path === path.join(root, 'sub')) {
        swapped = true;
        fs.renameSync(path.join(root, 'sub'), path.join(root, 'aside'));
        fs.symlinkSync(outside, path.join(root, 'sub'));
      }
      return undefined;
    });
    const { seen, result } = collect(root);
    expect(swapped).toBe(true);
    expect(seen).toEqual(['dir ', 'dir sub']);
    expect(result.errors).toEqual([{ path: path.join(root, 'sub'), code: 'ERACE' }]);
  });
});

describe('checkHomeChainSync', () => {
  it('refuses / and a home under a group-writable directory, naming that directory', () => {
    expect(caught(() => checkHomeChainSync('/', {})).code).toBe('EDANGEROUS_HOME');
    const shared = path.join(tempRoot(), 'shared');
    fs.mkdirSync(path.join(shared, 'home'), { recursive: true });
    fs.chmodSync(shared, 0o2770);
    const e = caught(() => checkHomeChainSync(path.join(shared, 'home'), {}));
    expect([e.code, e.path]).toEqual(['EUNSAFE_PATH', shared]);
    expect(e.message).toContain('is writable by its group (mode 2770)');
  });

  it('accepts a 2770 home itself, and a symlinked home whose link sits in a safe directory', () => {
    const root = tempRoot();
    const home = path.join(root, 'real-home');
    fs.mkdirSync(home, { mode: 0o700 });
    fs.chmodSync(home, 0o2770);
    fs.symlinkSync(home, path.join(root, 'link'));
    expect(checkHomeChainSync(home, {}).ino).toBe(fs.statSync(home).ino);
    expect(checkHomeChainSync(path.join(root, 'link'), {}).ino).toBe(fs.statSync(home).ino);
  });
});

describeNeeds(['root'], 'checkHomeChainSync as root with foreign owners', () => {
  it('a home owned by neither root nor HERMES_UID, and a directory on the way owned by another uid, are refused', () => {
    const root = tempRoot();
    const home = path.join(root, 'home');
    fs.mkdirSync(home);
    fs.chownSync(home, 4321, 4321);
    expect(caught(() => checkHomeChainSync(home, { uid: 1234 })).code).toBe('EFOREIGN_OWNER');
    expect(checkHomeChainSync(home, { uid: 4321 }).uid).toBe(4321);
    const theirs = path.join(root, 'theirs');
    fs.mkdirSync(path.join(theirs, 'home'), { recursive: true });
    fs.chownSync(theirs, 5555, 5555);
    const e = caught(() => checkHomeChainSync(path.join(theirs, 'home'), {}));
    expect([e.code, e.path]).toEqual(['EUNSAFE_PATH', theirs]);
  });
});

describe('reconcileFile: the operator\'s grant on managed state files', () => {
  it('a managed state.db at 0600 gets group rw back with operator, and only then; payloads never', () => {
    const env = tempEnv({ managed: true });
    const db = path.join(env.home, 'state.db');
    fs.writeFileSync(db, '', { mode: 0o600 });
    fs.chmodSync(db, 0o600);
    expect(reconcileFileSync(db, 'state-db', { env }).action).toBe('none');
    expect(reconcileFileSync(db, 'state-db', { env, operator: true, dryRun: true })).toMatchObject({ action: 'would-change', before: 0o600, expected: 0o660 });
    expect(modeOf(db)).toBe('0600');
    expect(reconcileFileSync(db, 'state-db', { env, operator: true })).toMatchObject({ action: 'changed', before: 0o600, after: 0o660 });
    expect(modeOf(db)).toBe('0660');
    const payload = path.join(env.home, 'p.json');
    fs.writeFileSync(payload, '', { mode: 0o600 });
    fs.chmodSync(payload, 0o600);
    expect(reconcileFileSync(payload, 'pending-messages', { env, operator: true }).action).toBe('none');
    const unmanaged = tempEnv();
    const udb = path.join(unmanaged.home, 'state.db');
    fs.writeFileSync(udb, '', { mode: 0o600 });
    fs.chmodSync(udb, 0o600);
    expect(reconcileFileSync(udb, 'state-db', { env: unmanaged, operator: true }).action).toBe('none');
  });
});
