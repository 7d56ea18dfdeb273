/** Resolving the file an atomic write replaces: links followed one step at a time, only inside the root. */
import type * as fs from 'node:fs';
import * as path from 'node:path';
import { FsPolicyError } from './errors.js';
import type { Plan } from './internal/io.js';
import type { Reached } from './internal/reach.js';
import { at, checkName, componentsBelow, type DirRef, type Held, lstatAt, realOf, walkPlan } from './internal/resolve.js';
import { isInside, op } from './internal/steps.js';
import { checkRegular } from './internal/verify.js';

/** The target reached: the directory that holds it, its name there, and what is there now. */
export interface Target {
  readonly dir: DirRef;
  readonly name: string;
  readonly existing: fs.Stats | undefined;
}

/**
 * Resolves the file `name` in the reached directory. A symlink there is followed by the resolver — one step
 * at a time, through descriptors — only while it stays inside the root; a dangling or escaping link is
 * refused and its target never created.
 */
export function* resolveTargetPlan(reached: Reached, name: string, held: Held): Plan<Target> {
  let stack: DirRef[] = [...reached.stack];
  let dir = reached.dir;
  let current = name;
  const requested = path.join(reached.dir.path, name);
  for (let hops = 0; ; hops++) {
    const display = path.join(dir.path, current);
    checkName(current, display);
    const st = yield* lstatAt(dir, current, display);
    if (st === undefined) return { dir, name: current, existing: undefined };
    if (!st.isSymbolicLink()) {
      checkRegular(display, st, 'resolve');
      return { dir, name: current, existing: st };
    }
    if (hops >= 40) throw new FsPolicyError({ code: 'ELOOP', step: 'resolve', path: display, message: `too many levels of symbolic links at ${display}` });
    const text = yield* op('resolve', display, 'readlink', at(dir, current));
    let parts: string[];
    if (path.isAbsolute(text)) {
      reached.root.real ??= yield* realOf(reached.root);
      const norm = path.normalize(text);
      const base = [reached.root.real, reached.root.path].find((r) => isInside(norm, r));
      if (base === undefined) {
        throw new FsPolicyError({
          code: 'ESYMLINK_ESCAPE',
          step: 'resolve',
          path: requested,
          message: `${display} -> ${text} leads outside ${reached.root.path}; refusing to write through it`,
        });
      }
      stack = [reached.root];
      parts = componentsBelow(base, norm);
    } else {
      parts = text.split('/');
    }
    const last = parts.pop();
    if (last === undefined || last === '' || last === '.' || last === '..') {
      throw new FsPolicyError({ code: 'ENOTREGULAR', step: 'resolve', path: display, message: `${display} -> ${text} does not name a file` });
    }
    try {
      stack = yield* walkPlan(reached.root, stack, parts, {}, held, { display, text });
    } catch (err) {
      if (err instanceof FsPolicyError && (err.code === 'ENOENT' || (err.code === 'EDANGLING_LINK' && err.path === display))) {
        throw new FsPolicyError({ code: 'EDANGLING_LINK', step: 'resolve', path: requested, message: `${display} -> ${text} is a dangling link; refusing to create its target` });
      }
      throw err;
    }
    dir = stack[stack.length - 1] ?? reached.root;
    current = last;
    const next = yield* lstatAt(dir, current, path.join(dir.path, current));
    if (next === undefined) {
      throw new FsPolicyError({ code: 'EDANGLING_LINK', step: 'resolve', path: requested, message: `${display} -> ${text} is a dangling link; refusing to create its target` });
    }
  }
}

