import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runNode, type RunOptions, type RunResult, tempRoot } from '@hermes/test-utils';

/** The BUILT CLI: tests run it as a real child process, as an operator would. */
export const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
export const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

if (!fs.existsSync(BIN)) {
  throw new Error(`${BIN} is missing: build first (pnpm turbo run build --filter=hermes-fs...)`);
}

export interface CliRun extends RunResult {
  readonly ms: number;
}

/** Runs `node dist/bin.js …args` (umask 022 unless told, HERMES_* scrubbed unless given). */
export function cli(args: readonly string[], options: RunOptions = {}): CliRun {
  const started = performance.now();
  const r = runNode(BIN, args, { timeoutMs: 120_000, ...options });
  return { ...r, ms: performance.now() - started };
}

/** Runs the CLI with `--json` and parses stdout as one JSON document. */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the document it expects
export function cliJson<T>(args: readonly string[], options: RunOptions = {}): { run: CliRun; json: T } {
  const run = cli([...args, '--json'], options);
  try {
    return { run, json: JSON.parse(run.stdout) as T };
  } catch {
    throw new Error(`no JSON from hermes-fs ${args.join(' ')} (status ${String(run.status)}):\n${run.stdout}\n${run.stderr}`);
  }
}

const roots: string[] = [];

/** A fresh, empty directory to hold one test home (removed by {@link cleanupHomes}). */
export function freshHome(): string {
  const root = tempRoot('hermes-fs-test-');
  roots.push(root);
  return path.join(root, 'home');
}

/** Removes every home this test file created (call from afterAll). */
export function cleanupHomes(): void {
  for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true });
}

/**
 * Seeds a realistic home through the packages' real APIs, in a child process with its own umask and
 * environment (see fixtures/seed-home.mjs). Returns what was written.
 */
export function seedHome(home: string, options: { umask?: number; env?: Record<string, string> } = {}): SeedResult {
  const r = runNode(fixture('seed-home.mjs'), [home], {
    umask: options.umask ?? 0o022,
    env: { HERMES_HOME: home, ...options.env },
  });
  if (r.status !== 0) throw new Error(`seed-home failed (${String(r.status)}): ${r.stderr}`);
  const line = r.stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as SeedResult;
}

/** Spools `n` payloads for one session key in one batch flush, as the gateway does (fixtures/spool-bulk.mjs); throws with the child's stderr if it fails. */
export function spoolBulk(home: string, key: string, n: number): void {
  const r = runNode(fixture('spool-bulk.mjs'), [home, key, String(n)], { env: { HERMES_HOME: home } });
  if (r.status !== 0) throw new Error(`spool-bulk failed (${String(r.status)}): ${r.stderr}`);
}

export interface SeedResult {
  readonly payload: string;
  readonly trace: string;
  readonly snapshot: string;
  readonly trajectory: string;
  readonly stateDb: string;
  readonly sessionId: string;
}

export interface PathState {
  readonly mode: number;
  /** The inode change time: a chmod, chown or rename that put things back would still show here. */
  readonly ctimeMs: number;
  readonly uid: number;
  readonly gid: number;
  readonly size: number;
  readonly sha256: string | null;
  readonly link: string | null;
}

/** Every path under `root` with its mode, ctime, owner, size and content hash (links not followed). */
export function snapshotTree(root: string): Record<string, PathState> {
  const out: Record<string, PathState> = {};
  const stack = [root];
  while (stack.length > 0) {
    const p = stack.pop();
    if (p === undefined) break;
    const st = fs.lstatSync(p);
    const rel = path.relative(root, p) || '.';
    out[rel] = {
      mode: st.mode,
      ctimeMs: st.ctimeMs,
      uid: st.uid,
      gid: st.gid,
      size: st.size,
      sha256: st.isFile() ? createHash('sha256').update(fs.readFileSync(p)).digest('hex') : null,
      link: st.isSymbolicLink() ? fs.readlinkSync(p) : null,
    };
    if (st.isDirectory()) for (const name of fs.readdirSync(p)) stack.push(path.join(p, name));
  }
  return out;
}

/** Four-digit octal permission bits of a path (lstat). */
export function modeOf(p: string): string {
  return (fs.lstatSync(p).mode & 0o7777).toString(8).padStart(4, '0');
}

// eslint-disable-next-line no-control-regex
export const ANSI = /\u001b\[[0-9;]*m/;
