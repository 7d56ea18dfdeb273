/**
 * The file tree as the persistence model sees it: inodes (keyed by their real inode number in the recorded
 * run) and directory entries. Snapshotted from a real directory, cloned and changed by replaying operations,
 * and written back as a real directory tree for the invariants to read.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface FileNode {
  readonly kind: 'file';
  mode: number;
  data: Buffer;
}

export interface DirNode {
  readonly kind: 'dir';
  mode: number;
  readonly entries: Map<string, number>;
}

export interface SymlinkNode {
  readonly kind: 'symlink';
  mode: number;
  readonly target: string;
}

export type TreeNode = FileNode | DirNode | SymlinkNode;

export interface Tree {
  /** The inode of the checked directory itself. */
  readonly root: number;
  readonly nodes: Map<number, TreeNode>;
}

/** Paths (relative to the snapshot root) left out of the model: files another component writes (SQLite's). */
export type Exclude = (rel: string) => boolean;

/** Reads a real directory tree into the model (symlinks are kept as links, never followed). */
export function snapshot(root: string, exclude: Exclude = () => false): Tree {
  const nodes = new Map<number, TreeNode>();
  const rootSt = fs.lstatSync(root);
  const walk = (dir: string, rel: string, ino: number, mode: number): void => {
    const entries = new Map<string, number>();
    nodes.set(ino, { kind: 'dir', mode, entries });
    for (const name of fs.readdirSync(dir).sort()) {
      const childRel = rel === '' ? name : `${rel}/${name}`;
      if (exclude(childRel)) continue;
      const p = path.join(dir, name);
      const st = fs.lstatSync(p);
      entries.set(name, st.ino);
      if (nodes.has(st.ino)) continue; // a second name of a file already read
      const m = st.mode & 0o7777;
      if (st.isDirectory()) walk(p, childRel, st.ino, m);
      else if (st.isSymbolicLink()) nodes.set(st.ino, { kind: 'symlink', mode: m, target: fs.readlinkSync(p) });
      else if (st.isFile()) nodes.set(st.ino, { kind: 'file', mode: m, data: fs.readFileSync(p) });
      else throw new Error(`crashcheck: ${p} is neither a file, a directory nor a symlink; the model has no such node`);
    }
  };
  walk(root, '', rootSt.ino, rootSt.mode & 0o7777);
  return { root: rootSt.ino, nodes };
}

/** A deep copy (file data buffers are shared: the model never mutates a buffer in place). */
export function cloneTree(t: Tree): Tree {
  const nodes = new Map<number, TreeNode>();
  for (const [ino, n] of t.nodes) {
    if (n.kind === 'dir') nodes.set(ino, { kind: 'dir', mode: n.mode, entries: new Map(n.entries) });
    else nodes.set(ino, { ...n });
  }
  return { root: t.root, nodes };
}

export interface Entry {
  readonly rel: string;
  readonly ino: number;
  readonly node: TreeNode;
}

/** Every entry reachable from the root, depth first in name order (a hard-linked file appears under each name). */
export function entries(t: Tree): Entry[] {
  const out: Entry[] = [];
  const walk = (ino: number, rel: string, seen: Set<number>): void => {
    const n = t.nodes.get(ino);
    if (n?.kind !== 'dir') return;
    for (const name of [...n.entries.keys()].sort()) {
      const child = n.entries.get(name);
      if (child === undefined) continue;
      const node = t.nodes.get(child);
      if (node === undefined) continue;
      const childRel = rel === '' ? name : `${rel}/${name}`;
      out.push({ rel: childRel, ino: child, node });
      if (node.kind === 'dir' && !seen.has(child)) walk(child, childRel, new Set([...seen, child]));
    }
  };
  walk(t.root, '', new Set([t.root]));
  return out;
}

/**
 * A canonical digest of what a crash state shows: names, types, modes, contents and which names share an
 * inode. Inode numbers themselves are not part of it (two states that differ only there are one state).
 */
export function digest(t: Tree): string {
  const h = createHash('sha256');
  const rootNode = t.nodes.get(t.root);
  h.update(`root ${String(rootNode?.mode ?? 0)}\n`);
  const firstName = new Map<number, string>();
  for (const e of entries(t)) {
    const n = e.node;
    const shared = firstName.get(e.ino);
    if (shared === undefined) firstName.set(e.ino, e.rel);
    h.update(`${e.rel}\0${n.kind}\0${n.mode.toString(8)}\0`);
    if (shared !== undefined) h.update(`=${shared}`);
    else if (n.kind === 'file') h.update(createHash('sha256').update(n.data).digest());
    else if (n.kind === 'symlink') h.update(n.target);
    h.update('\n');
  }
  return h.digest('hex');
}

/** Writes the tree under `dest` (which must not exist): directories, files, hard links, symlinks, exact modes. */
export function materialize(t: Tree, dest: string): void {
  const rootNode = t.nodes.get(t.root);
  if (rootNode?.kind !== 'dir') throw new Error('crashcheck: the tree has no root directory');
  fs.mkdirSync(dest);
  const written = new Map<number, string>();
  const dirModes: [string, number][] = [[dest, rootNode.mode]];
  for (const e of entries(t)) {
    const p = path.join(dest, e.rel);
    const n = e.node;
    const first = written.get(e.ino);
    if (first !== undefined && n.kind !== 'dir') {
      fs.linkSync(first, p);
      continue;
    }
    written.set(e.ino, p);
    if (n.kind === 'dir') {
      fs.mkdirSync(p);
      dirModes.push([p, n.mode]);
    } else if (n.kind === 'symlink') {
      fs.symlinkSync(n.target, p);
    } else {
      fs.writeFileSync(p, n.data);
      fs.chmodSync(p, n.mode);
    }
  }
  // Directory modes last (a 0500 directory would refuse the entries written into it).
  for (const [p, mode] of dirModes.reverse()) fs.chmodSync(p, mode);
}

/** One line per entry, for a report: `rel  mode  size  preview`. */
export function describe(t: Tree, highlight?: (rel: string) => boolean): string[] {
  const lines: string[] = [];
  for (const e of entries(t)) {
    const n = e.node;
    const mode = n.mode.toString(8).padStart(4, '0');
    const mark = highlight?.(e.rel) === true ? '  <--' : '';
    if (n.kind === 'dir') lines.push(`${e.rel}/  ${mode}${mark}`);
    else if (n.kind === 'symlink') lines.push(`${e.rel} -> ${n.target}${mark}`);
    else lines.push(`${e.rel}  ${mode}  ${String(n.data.length)} bytes  ${preview(n.data)}${mark}`);
  }
  return lines;
}

/** A short, printable view of file content (NUL bytes shown as \0). */
export function preview(data: Buffer, max = 60): string {
  const text = data.subarray(0, max).toString('latin1').replace(/\0/g, '\\0').replace(/\n/g, '\\n');
  return JSON.stringify(data.length > max ? `${text}…` : text);
}

/** The differences between two trees (for the recording's self-check), empty when they show the same state. */
export function differences(expected: Tree, actual: Tree): string[] {
  const index = (t: Tree): Map<string, TreeNode> => new Map(entries(t).map((e) => [e.rel, e.node]));
  const a = index(expected);
  const b = index(actual);
  const out: string[] = [];
  for (const [rel, n] of a) {
    const m = b.get(rel);
    if (m === undefined) out.push(`${rel}: in the model, missing on disk`);
    else if (m.kind !== n.kind) out.push(`${rel}: ${n.kind} in the model, ${m.kind} on disk`);
    else if (m.mode !== n.mode) out.push(`${rel}: mode ${n.mode.toString(8)} in the model, ${m.mode.toString(8)} on disk`);
    else if (n.kind === 'file' && m.kind === 'file' && !n.data.equals(m.data)) {
      out.push(`${rel}: ${String(n.data.length)} bytes in the model, ${String(m.data.length)} different bytes on disk`);
    }
  }
  for (const rel of b.keys()) if (!a.has(rel)) out.push(`${rel}: on disk, missing in the model`);
  return out;
}
