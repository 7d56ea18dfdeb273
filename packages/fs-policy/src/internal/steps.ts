import type * as fs from 'node:fs';
import * as path from 'node:path';
import { errnoCode, type FsStep, toPolicyError } from '../errors.js';
import { call, type OpName, type Ops, type Req } from './io.js';

/** Yields one syscall; a failure becomes an FsPolicyError naming `step` and `p`. */
export function* op<K extends OpName>(
  step: FsStep,
  p: string,
  name: K,
  ...args: Parameters<Ops[K]>
): Generator<Req, ReturnType<Ops[K]>, unknown> {
  try {
    return yield* call(step, p, name, ...args);
  } catch (err) {
    throw toPolicyError(err, step, p, `${name} ${p}`);
  }
}

/** lstat that answers undefined for a missing path (ENOENT), and throws a policy error otherwise. */
export function* lstatOrNull(p: string): Generator<Req, fs.Stats | undefined, unknown> {
  try {
    return yield* call('lstat', p, 'lstat', p);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw toPolicyError(err, 'lstat', p, `lstat ${p}`);
  }
}

/** Runs a cleanup syscall and reports (never throws) its failure as a warning line. */
export function* bestEffort<K extends OpName>(
  warnings: string[],
  step: FsStep,
  p: string,
  name: K,
  ...args: Parameters<Ops[K]>
): Generator<Req, boolean, unknown> {
  try {
    yield* call(step, p, name, ...args);
    return true;
  } catch (err) {
    const code = errnoCode(err);
    if (name === 'unlink' && code === 'ENOENT') return true;
    warnings.push(`${name} ${p} failed during ${step}: ${code ?? String(err)}`);
    return false;
  }
}

/** True when `child` is `parent` or lies below it (both absolute and normalised). */
export function isInside(child: string, parent: string): boolean {
  if (child === parent) return true;
  const prefix = parent.endsWith(path.sep) ? parent : parent + path.sep;
  return child.startsWith(prefix);
}

/** Every ancestor of an absolute path from the filesystem root down to the path itself (root excluded). */
export function levels(target: string): string[] {
  const out: string[] = [];
  let current = target;
  for (;;) {
    const parent = path.dirname(current);
    if (parent === current) break;
    out.push(current);
    current = parent;
  }
  return out.reverse();
}
