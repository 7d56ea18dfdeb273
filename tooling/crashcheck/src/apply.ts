/** Applying one recorded operation to a model tree, exactly as the running system applied it. */
import type { MetaOp, WriteOp } from './ops.js';
import type { DirNode, Tree, TreeNode } from './tree.js';

function dirOf(t: Tree, ino: number): DirNode | undefined {
  const n = t.nodes.get(ino);
  return n?.kind === 'dir' ? n : undefined;
}

/**
 * Applies a metadata operation. An operation whose directory or inode the tree does not have (its creation
 * was not persisted in this crash state) changes nothing that is reachable, so it is skipped; the model's
 * dependency rules keep it from naming an entry that was never made.
 */
export function applyMeta(t: Tree, op: MetaOp): void {
  switch (op.kind) {
    case 'mkdir': {
      t.nodes.set(op.ino, { kind: 'dir', mode: op.mode, entries: new Map() });
      dirOf(t, op.parent)?.entries.set(op.name, op.ino);
      return;
    }
    case 'create': {
      t.nodes.set(op.ino, { kind: 'file', mode: op.mode, data: Buffer.alloc(0) });
      dirOf(t, op.parent)?.entries.set(op.name, op.ino);
      return;
    }
    case 'tmpfile': {
      // An inode and no entry: nothing reaches it until a link names it.
      t.nodes.set(op.ino, { kind: 'file', mode: op.mode, data: Buffer.alloc(0) });
      return;
    }
    case 'truncate': {
      const n = t.nodes.get(op.ino);
      if (n?.kind !== 'file') return;
      n.data = n.data.length >= op.length ? n.data.subarray(0, op.length) : Buffer.concat([n.data, Buffer.alloc(op.length - n.data.length)]);
      return;
    }
    case 'chmod': {
      const n: TreeNode | undefined = t.nodes.get(op.ino);
      if (n !== undefined) n.mode = op.mode;
      return;
    }
    case 'link': {
      if (t.nodes.has(op.ino)) dirOf(t, op.parent)?.entries.set(op.name, op.ino);
      return;
    }
    case 'rename': {
      const from = dirOf(t, op.fromParent);
      if (from?.entries.get(op.fromName) === op.ino) from.entries.delete(op.fromName);
      if (t.nodes.has(op.ino)) dirOf(t, op.toParent)?.entries.set(op.toName, op.ino);
      return;
    }
    case 'unlink': {
      const d = dirOf(t, op.parent);
      if (d?.entries.get(op.name) === op.ino) d.entries.delete(op.name);
      return;
    }
  }
}

/** Applies a write in full (the state without a crash). */
export function applyWrite(t: Tree, op: WriteOp): void {
  const n = t.nodes.get(op.ino);
  if (n?.kind !== 'file') return;
  const end = op.offset + op.data.length;
  const out = Buffer.alloc(Math.max(n.data.length, end));
  n.data.copy(out, 0);
  op.data.copy(out, op.offset);
  n.data = out;
}
