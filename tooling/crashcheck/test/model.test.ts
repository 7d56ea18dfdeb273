/**
 * The persistence models on hand-written operation logs: each rule of docs/crash-model.md, with the states it
 * must allow and the ones it must not.
 */
import { describe, expect, it } from 'vitest';
import { crashStates, type ModelName } from '../src/model.js';
import type { ModelOp } from '../src/ops.js';
import type { Recording } from '../src/recorder.js';
import { entries, type Tree } from '../src/tree.js';

const ROOT = 1;
const DIR = 2;
const OLD = 3;
const TMP = 4;

function initial(withOld: boolean): Tree {
  const nodes: Tree['nodes'] = new Map();
  nodes.set(ROOT, { kind: 'dir', mode: 0o700, entries: new Map([['d', DIR]]) });
  nodes.set(DIR, { kind: 'dir', mode: 0o700, entries: new Map(withOld ? [['f', OLD]] : []) });
  if (withOld) nodes.set(OLD, { kind: 'file', mode: 0o644, data: Buffer.from('old\n') });
  return { root: ROOT, nodes };
}

function recording(ops: ModelOp[], withOld = true): Recording {
  const t = initial(withOld);
  return { root: '/x', initial: t, final: t, syscalls: [], ops, names: new Map(), problems: [] };
}

/** What each state shows, as `name=content` (mode omitted), sorted: one string per distinct state at `cut`. */
function views(rec: Recording, model: ModelName, cut: number): string[] {
  const out = new Set<string>();
  for (const s of crashStates(rec, model)) {
    if (s.cut !== cut) continue;
    const parts = entries(s.tree)
      .filter((e) => e.node.kind === 'file')
      .map((e) => `${e.rel}=${e.node.kind === 'file' ? e.node.data.toString() : ''}`);
    out.add(parts.join(' '));
  }
  return [...out].sort();
}

const NEW = Buffer.from('new content\n');

/** The temp-and-rename write, with or without its fsyncs. */
function replaceOps(fileFsync: boolean, dirFsync: boolean): ModelOp[] {
  const ops: ModelOp[] = [
    { kind: 'create', parent: DIR, name: 't', ino: TMP, mode: 0o600, sys: -1 },
    { kind: 'write', ino: TMP, offset: 0, data: NEW, sys: -1 },
  ];
  if (fileFsync) ops.push({ kind: 'fsync', ino: TMP, dir: false, sys: -1 });
  ops.push({ kind: 'rename', ino: TMP, fromParent: DIR, fromName: 't', toParent: DIR, toName: 'f', replaced: OLD, sys: -1 });
  if (dirFsync) ops.push({ kind: 'fsync', ino: DIR, dir: true, sys: -1 });
  return ops;
}

describe('ext4 (data=ordered) model', () => {
  it('a rename without a file fsync can persist before the data: the target is empty after the crash', () => {
    const rec = recording(replaceOps(false, true));
    expect(views(rec, 'ext4', 3)).toEqual(['d/f=', 'd/f=new content\n', 'd/f=old\n', 'd/f=old\n d/t=', 'd/f=old\n d/t=new content\n']);
    // After the directory fsync the rename is durable, the data still is not.
    expect(views(rec, 'ext4', 4)).toEqual(['d/f=', 'd/f=new content\n']);
  });

  it('with the file fsync first, the target is the old or the new content, never empty', () => {
    const rec = recording(replaceOps(true, true));
    expect(views(rec, 'ext4', 4)).toEqual(['d/f=new content\n', 'd/f=old\n d/t=new content\n']);
    expect(views(rec, 'ext4', 5)).toEqual(['d/f=new content\n']);
  });

  it('metadata persists as a journal prefix: a file fsync commits every earlier operation, so the rename needs no directory fsync to be ordered', () => {
    const ops: ModelOp[] = [
      ...replaceOps(true, false),
      { kind: 'create', parent: DIR, name: 'g', ino: 9, mode: 0o600, sys: -1 },
      { kind: 'write', ino: 9, offset: 0, data: Buffer.from('g'), sys: -1 },
      { kind: 'fsync', ino: 9, dir: false, sys: -1 },
    ];
    expect(views(recording(ops), 'ext4', ops.length)).toEqual(['d/f=new content\n d/g=g']);
  });

  it('unsynced appends persist in block-sized pieces (and never as zeros)', () => {
    const big = Buffer.alloc(5000, 0x61);
    const ops: ModelOp[] = [{ kind: 'write', ino: OLD, offset: 4, data: big, sys: -1 }];
    const lengths = [...crashStates(recording(ops), 'ext4')]
      .filter((s) => s.cut === 1)
      .map((s) => {
        const n = s.tree.nodes.get(OLD);
        return n?.kind === 'file' ? n.data.length : -1;
      });
    expect([...new Set(lengths)].sort((a, b) => a - b)).toEqual([4, 4096, 5004]);
  });
});

describe('POSIX-only model', () => {
  it('a file fsync does not make its directory entry durable; a directory fsync does', () => {
    const ops: ModelOp[] = [
      { kind: 'create', parent: DIR, name: 'n', ino: 9, mode: 0o600, sys: -1 },
      { kind: 'write', ino: 9, offset: 0, data: Buffer.from('n'), sys: -1 },
      { kind: 'fsync', ino: 9, dir: false, sys: -1 },
      { kind: 'fsync', ino: DIR, dir: true, sys: -1 },
    ];
    const rec = recording(ops, false);
    expect(views(rec, 'posix', 3)).toEqual(['', 'd/n=n']);
    expect(views(rec, 'ext4', 3)).toEqual(['d/n=n']);
    expect(views(rec, 'posix', 4)).toEqual(['d/n=n']);
  });

  it('unsynced metadata operations persist in any subset: a later rename without the earlier create is impossible (dependency)', () => {
    const ops: ModelOp[] = [
      { kind: 'create', parent: DIR, name: 't', ino: TMP, mode: 0o600, sys: -1 },
      { kind: 'rename', ino: TMP, fromParent: DIR, fromName: 't', toParent: DIR, toName: 'u', replaced: undefined, sys: -1 },
      { kind: 'create', parent: DIR, name: 'v', ino: 9, mode: 0o600, sys: -1 },
    ];
    // Every combination except "rename without create" (which would name nothing).
    expect(views(recording(ops), 'posix', 3)).toEqual(['d/f=old\n', 'd/f=old\n d/t=', 'd/f=old\n d/t= d/v=', 'd/f=old\n d/u=', 'd/f=old\n d/u= d/v=', 'd/f=old\n d/v=']);
  });

  it('an unsynced size may persist before the data: the appended range reads as zeros', () => {
    const ops: ModelOp[] = [{ kind: 'write', ino: OLD, offset: 4, data: Buffer.from('abc'), sys: -1 }];
    expect(views(recording(ops), 'posix', 1)).toEqual(['d/f=old\n', 'd/f=old\n\0\0\0', 'd/f=old\nabc']);
    expect(views(recording(ops), 'ext4', 1)).toEqual(['d/f=old\n', 'd/f=old\nabc']);
  });
});

describe('the database as one event', () => {
  it('a commit is durable once it returned; while it runs, it may or may not be', () => {
    const ops: ModelOp[] = [
      { kind: 'db-begin', id: 1, sys: -1 },
      { kind: 'db-commit', id: 1, payload: 'tx1', sys: -1 },
    ];
    const dbAt = (cut: number): string[] =>
      [...new Set([...crashStates(recording(ops), 'ext4')].filter((s) => s.cut === cut).map((s) => JSON.stringify(s.db)))].sort();
    expect(dbAt(0)).toEqual(['[]']);
    expect(dbAt(1)).toEqual(['["tx1"]', '[]']);
    expect(dbAt(2)).toEqual(['["tx1"]']);
  });
});
