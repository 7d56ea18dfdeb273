/**
 * The unnamed temp file (O_TMPFILE) under the crash model: the model's rules for an inode with no name and the
 * link that names it (hand-written logs), the recorded fs-policy protocol (nothing named before the fsync, 0
 * violations), and a planted bug — the link made before the fsync — that the checker must catch.
 */
import { setLogger, silentLogger } from '@hermes/fs-policy';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CheckResult, runScenario } from '../src/check.js';
import { crashStates, type ModelName } from '../src/model.js';
import type { ModelOp } from '../src/ops.js';
import type { Recording } from '../src/recorder.js';
import { allScenarios } from '../src/scenarios/index.js';
import { tmpfileScenarios, tmpfileUnavailable } from '../src/scenarios/tmpfile.js';
import { entries, type Tree } from '../src/tree.js';

beforeAll(() => {
  setLogger(silentLogger);
});

const ROOT = 1;
const DIR = 2;
const FILE = 4;
const DATA = Buffer.from('new content\n');

function recording(ops: ModelOp[]): Recording {
  const nodes: Tree['nodes'] = new Map();
  nodes.set(ROOT, { kind: 'dir', mode: 0o700, entries: new Map([['d', DIR]]) });
  nodes.set(DIR, { kind: 'dir', mode: 0o700, entries: new Map() });
  const t: Tree = { root: ROOT, nodes };
  return { root: '/x', initial: t, final: t, syscalls: [], ops, names: new Map(), problems: [] };
}

/** What each distinct state at `cut` shows, as `name=content`, sorted ('' for a state with no file). */
function views(rec: Recording, model: ModelName, cut: number): string[] {
  const out = new Set<string>();
  for (const s of crashStates(rec, model)) {
    if (s.cut !== cut) continue;
    out.add(
      entries(s.tree)
        .filter((e) => e.node.kind === 'file')
        .map((e) => `${e.rel}=${e.node.kind === 'file' ? e.node.data.toString() : ''}`)
        .join(' '),
    );
  }
  return [...out].sort();
}

/** An unnamed file, its bytes, optionally its fsync, then the link that names it `d/f`. */
function unnamedOps(fsyncFirst: boolean): ModelOp[] {
  const ops: ModelOp[] = [
    { kind: 'tmpfile', dir: DIR, ino: FILE, mode: 0o600, sys: -1 },
    { kind: 'write', ino: FILE, offset: 0, data: DATA, sys: -1 },
  ];
  if (fsyncFirst) ops.push({ kind: 'fsync', ino: FILE, dir: false, sys: -1 });
  ops.push({ kind: 'link', ino: FILE, parent: DIR, name: 'f', sys: -1 });
  return ops;
}

describe('the model: an inode with no name, and the link that names it', () => {
  for (const model of ['ext4', 'posix'] as const) {
    it(`${model}: before the link, no crash state shows anything of the file, fsynced or not`, () => {
      const rec = recording(unnamedOps(true));
      for (const cut of [0, 1, 2, 3]) expect(views(rec, model, cut), `cut ${String(cut)}`).toEqual(['']);
    });

    it(`${model}: linked after its fsync, the name reaches the complete file or nothing`, () => {
      expect(views(recording(unnamedOps(true)), model, 4)).toEqual(['', 'd/f=new content\n']);
    });

    it(`${model}: linked before any fsync, the name can reach an empty file (the data need not have persisted)`, () => {
      // POSIX also lets the size persist before the data: the bytes read as zeros (P4).
      const zeros = model === 'posix' ? [`d/f=${'\0'.repeat(DATA.length)}`] : [];
      expect(views(recording(unnamedOps(false)), model, 3)).toEqual(['', 'd/f=', ...zeros, 'd/f=new content\n']);
    });
  }
});

const native = tmpfileUnavailable();

describe.skipIf(native !== undefined)(`fs-policy's atomic write with an unnamed temp${native === undefined ? '' : ` [skipped: ${native}]`}`, () => {
  async function check(protocol: string, form: 'sync' | 'async', mutation?: string): Promise<CheckResult> {
    const s = tmpfileScenarios().find((x) => x.protocol === protocol && x.form === form);
    if (s === undefined) throw new Error(`no scenario ${protocol} (${form})`);
    const [r] = await runScenario(s, { models: ['ext4'], mutation });
    if (r === undefined) throw new Error('no result');
    return r;
  }

  it('six protocols (replace, create, overwrite: false; sync and async) are in the checker\'s table', () => {
    expect(allScenarios().filter((s) => s.tmpfile === true).map((s) => `${s.protocol} ${s.form}`)).toEqual([
      'atomicWrite, O_TMPFILE (replace) sync',
      'atomicWrite, O_TMPFILE (replace) async',
      'atomicWrite, O_TMPFILE (create) sync',
      'atomicWrite, O_TMPFILE (create) async',
      'atomicWrite, O_TMPFILE (overwrite: false) sync',
      'atomicWrite, O_TMPFILE (overwrite: false) async',
    ]);
  });

  for (const form of ['sync', 'async'] as const) {
    it(`overwrite: false (${form}): the file gets its only name after its fsync; 0 violations`, async () => {
      const r = await check('atomicWrite, O_TMPFILE (overwrite: false)', form);
      expect(r.error).toBeUndefined();
      expect(r.violations).toBe(0);
      expect(r.recording.ops.map((o) => o.kind)).toEqual(['tmpfile', 'write', 'chmod', 'fsync', 'link', 'fsync', 'mark']);
      expect([r.ops, r.states]).toEqual([7, 3]);
    });

    it(`replace (${form}): linked to a temp name after its fsync, then renamed; 0 violations`, async () => {
      const r = await check('atomicWrite, O_TMPFILE (replace)', form);
      expect(r.error).toBeUndefined();
      expect(r.violations).toBe(0);
      expect(r.recording.ops.map((o) => o.kind)).toEqual(['tmpfile', 'write', 'chmod', 'fsync', 'link', 'link', 'rename', 'fsync', 'unlink', 'mark']);
      expect([r.ops, r.states]).toEqual([10, 7]);
    });
  }

  it('the named rows record the named temp: the recorder answers O_TMPFILE as a filesystem without it does', async () => {
    const named = allScenarios().find((s) => s.protocol === 'atomicWrite (replace)' && s.form === 'sync');
    if (named === undefined) throw new Error('no named scenario');
    const [r] = await runScenario(named, { models: ['ext4'] });
    const refused = r?.recording.syscalls.filter((c) => c.result.startsWith('error EOPNOTSUPP')).map((c) => `${c.step} ${c.op}: ${c.result}`);
    expect(refused).toEqual(['open open: error EOPNOTSUPP (no unnamed files: the named temp is recorded)']);
    expect(r?.recording.ops[0]?.kind).toBe('create');
    expect(r?.violations).toBe(0);
  });

  it('planted bug, overwrite: false: the link made before the fsync puts a torn file under the target name', async () => {
    const r = await check('atomicWrite, O_TMPFILE (overwrite: false)', 'sync', 'link-before-fsync');
    expect(r.error).toBeUndefined();
    expect(r.violations).toBe(3);
    // The unnamed file, its write (only two of its three blocks persist), its mode, the link; crash.
    expect(r.minimal?.state.cut).toBe(4);
    expect(r.minimal?.state.lost).toEqual([1]);
    expect(r.minimal?.messages).toEqual(['home/sessions/state.json holds 8192 bytes that are neither the old (100) nor the new (9000) content']);
  });

  it('planted bug, replace: the link made before the fsync leaves a partial temp (the target itself stays whole)', async () => {
    const r = await check('atomicWrite, O_TMPFILE (replace)', 'async', 'link-before-fsync');
    expect(r.error).toBeUndefined();
    expect(r.violations).toBe(3);
    expect(r.minimal?.state.cut).toBe(4);
    expect(r.minimal?.state.lost).toEqual([1]);
    expect(r.minimal?.messages).toHaveLength(1);
    expect(r.minimal?.messages[0]).toMatch(/^home\/sessions\/\.state\.json\.\d+-\d+\.[0-9a-f]{12}\.tmp is a partial temp: 8192 bytes, not the complete 9000$/);
  });
});
