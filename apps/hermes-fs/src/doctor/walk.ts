/**
 * An iterative, link-safe walk of a home: one readdir per directory and one lstat per entry, no recursion
 * (deep trees cannot overflow the stack), no child processes, links never followed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface WalkEntry {
  /** Absolute path. */
  readonly path: string;
  /** Path relative to the walk root ('' for the root). */
  readonly rel: string;
  readonly name: string;
  readonly stat: fs.Stats;
}

export interface WalkError {
  readonly path: string;
  readonly code: string;
}

export interface WalkVisitor {
  /** Return false to skip descending into this directory. */
  directory(entry: WalkEntry): boolean | undefined;
  file(entry: WalkEntry): void;
  symlink(entry: WalkEntry): void;
  other?(entry: WalkEntry): void;
}

function codeOf(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : 'EUNKNOWN';
}

export function walk(root: string, visitor: WalkVisitor): { errors: WalkError[] } {
  const errors: WalkError[] = [];
  const rootStat = fs.lstatSync(root);
  const first: WalkEntry = { path: root, rel: '', name: path.basename(root), stat: rootStat };
  if (visitor.directory(first) === false) return { errors };
  const stack: WalkEntry[] = [first];
  while (stack.length > 0) {
    const dir = stack.pop();
    if (dir === undefined) break;
    let names: string[];
    try {
      names = fs.readdirSync(dir.path);
    } catch (err) {
      errors.push({ path: dir.path, code: codeOf(err) });
      continue;
    }
    names.sort();
    // Push subdirectories in reverse so they are visited in name order.
    const subdirs: WalkEntry[] = [];
    for (const name of names) {
      const full = path.join(dir.path, name);
      let stat: fs.Stats;
      try {
        stat = fs.lstatSync(full);
      } catch (err) {
        if (codeOf(err) !== 'ENOENT') errors.push({ path: full, code: codeOf(err) });
        continue;
      }
      const entry: WalkEntry = { path: full, rel: dir.rel === '' ? name : `${dir.rel}/${name}`, name, stat };
      if (stat.isSymbolicLink()) visitor.symlink(entry);
      else if (stat.isDirectory()) {
        if (visitor.directory(entry) !== false) subdirs.push(entry);
      } else if (stat.isFile()) visitor.file(entry);
      else visitor.other?.(entry);
    }
    for (let i = subdirs.length - 1; i >= 0; i--) {
      const s = subdirs[i];
      if (s !== undefined) stack.push(s);
    }
  }
  return { errors };
}
