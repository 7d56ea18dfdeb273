/** Small helpers shared by the recovery pass's modules (recover.ts, recover-commit.ts, recover-log.ts). */
import * as fs from 'node:fs';
import { isErrnoException } from '@hermes/fs-policy';
import { describeValue } from './errors.js';
import { explain, sys } from './held.js';

export function euid(): number {
  return typeof process.geteuid === 'function' ? process.geteuid() : -1;
}

export function egid(): number {
  return typeof process.getegid === 'function' ? process.getegid() : -1;
}

export function codeOf(err: unknown, fallback: string): string {
  if (isErrnoException(err) && err.code !== undefined) return err.code;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : fallback;
}

/** What was thrown, as words: never throws itself (a resolver or store may throw a value with no string form). */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return explain(err).message;
  try {
    return String(err);
  } catch {
    return `${describeValue(err)} that has no string form`;
  }
}

/** An error to log, grouped by cause at the end of the pass. */
export interface Problem {
  readonly path: string;
  readonly code: string;
  readonly message: string;
  readonly hint: string;
}

/** The owner of a spool entry (through the held spool), or undefined when it cannot be looked at. */
export function ownerOf(p: string): number | undefined {
  try {
    return fs.lstatSync(sys(p)).uid;
  } catch {
    return undefined;
  }
}
