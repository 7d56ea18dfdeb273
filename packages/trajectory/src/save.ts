import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  appendJsonLine,
  appendJsonLineSync,
  expandTilde,
  getLogger,
  loadEnvironment,
  type AppendOptions,
  type AppendResult,
  type EnvSource,
  type FsPolicyLogger,
  type HermesEnvironment,
} from '@hermes/fs-policy';
import type { ShareGptTurn } from './sharegpt.js';

/** The default file of a completed trajectory. */
export const COMPLETED_FILENAME = 'trajectory_samples.jsonl';
/** The default file of a trajectory that did not complete. */
export const FAILED_FILENAME = 'failed_trajectories.jsonl';
/** Where trajectories go instead of a git work tree: `<home>/trajectories/`. */
export const TRAJECTORIES_DIR = 'trajectories';

/** One line of a trajectory file, field order as the reference writes it. */
export interface TrajectoryRecord {
  readonly conversations: readonly ShareGptTurn[];
  /** When the line was written: ISO 8601 in UTC with milliseconds (`2025-11-30T06:42:00.123Z`). */
  readonly timestamp: string;
  readonly model: string;
  readonly completed: boolean;
}

export interface TrajectoryPathOptions {
  readonly completed: boolean;
  /** The Hermes home (`~` expanded, made absolute); redirected trajectories go to `<home>/trajectories/`. */
  readonly home: string;
  /**
   * The file. Default `trajectory_samples.jsonl` (completed) or `failed_trajectories.jsonl`. A relative name
   * resolves against `cwd` and is subject to the git redirect; an absolute one (or `~/…`) is used as given.
   */
  readonly filename?: string | undefined;
  /** The directory relative names resolve against (default `process.cwd()`). */
  readonly cwd?: string | undefined;
  /** Keep a relative file inside a git work tree where it points (config `agent.trajectory_allow_git_cwd`). */
  readonly allowGitCwd?: boolean | undefined;
  /** Variables for `~` expansion (default `process.env`). */
  readonly vars?: EnvSource | undefined;
}

export interface SaveTrajectoryOptions extends TrajectoryPathOptions {
  readonly model: string;
  /** The fs-policy environment for `home`; loaded with `loadEnvironment({ home })` when omitted. */
  readonly env?: HermesEnvironment | undefined;
  /** fsync after the line (default false). */
  readonly fsync?: boolean | undefined;
  /** The time written as `timestamp` (default now). */
  readonly now?: Date | undefined;
  /** Receives the one-time redirect notice (default: the fs-policy logger, which prints warnings to stderr). */
  readonly logger?: FsPolicyLogger | undefined;
}

export interface TrajectoryPath {
  /** Where the line goes. */
  readonly path: string;
  /** Where it would have gone without the git redirect (equal to `path` when not redirected). */
  readonly requestedPath: string;
  /** True when the file was moved out of a git work tree into `<home>/trajectories/`. */
  readonly redirected: boolean;
  /** The work tree (the directory holding `.git`) the requested file lies in, or null (none, or not checked). */
  readonly gitWorkTree: string | null;
}

export interface SaveTrajectoryResult extends TrajectoryPath {
  /** True when this call created the file (then it is owner-only, `0600`). */
  readonly created: boolean;
  /** The file's permission bits after the append; an existing file keeps the mode its owner chose. */
  readonly mode: number;
  readonly bytes: number;
  /** Directories this call created (each secured as kind `trajectories`). */
  readonly createdDirs: readonly string[];
  /** Things left as they were that a user should know about (from fs-policy). */
  readonly warnings: readonly string[];
}

/** True when `child` is `parent` or lies below it (both absolute and normalised). */
function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * The git work tree `dir` lies in: the nearest ancestor (including `dir`) holding a `.git` directory or a
 * `.git` file (worktrees, submodules). No git process is spawned, so `GIT_DIR`/`GIT_WORK_TREE` and bare
 * repositories are not considered; unreadable levels count as "no `.git` here". Returns null outside a
 * work tree.
 */
export function findGitWorkTree(dir: string): string | null {
  let current = path.resolve(dir);
  for (;;) {
    try {
      // By path, on purpose and harmless: metadata only (nothing is opened, read or written through it), and
      // the answer only decides whether a trajectory is redirected into the home. A planted `.git` makes the
      // redirect happen (the safer side); the write itself goes through fs-policy.
      const st = fs.statSync(path.join(current, '.git'));
      if (st.isDirectory() || st.isFile()) return current;
    } catch {
      // ENOENT, ENOTDIR (a level that is a file or missing), EACCES: no work tree marker at this level.
    }
    const parent = path.dirname(current);
    if (parent === current) return null;
    current = parent;
  }
}

function resolveHome(home: string, vars: EnvSource | undefined): string {
  if (typeof home !== 'string' || home.trim() === '') throw new TypeError('trajectory: `home` must be a non-empty path');
  return path.resolve(expandTilde(home, vars));
}

/**
 * Decides where a trajectory line goes (no I/O beyond looking for `.git`): the default or relative name
 * resolved against `cwd`; when that target lies inside a git work tree and `allowGitCwd` is not set, it is
 * redirected to `<home>/trajectories/<name>` (only the base name when the relative name climbs with `..`),
 * so a full transcript never lands next to source code. Absolute names and targets already inside the home
 * are used as given.
 */
export function resolveTrajectoryPath(options: TrajectoryPathOptions): TrajectoryPath {
  const home = resolveHome(options.home, options.vars);
  const name = options.filename ?? (options.completed ? COMPLETED_FILENAME : FAILED_FILENAME);
  if (name === '') throw new TypeError('trajectory: `filename` must not be empty');
  const expanded = expandTilde(name, options.vars);
  if (path.isAbsolute(expanded)) {
    const p = path.normalize(expanded);
    return { path: p, requestedPath: p, redirected: false, gitWorkTree: null };
  }
  const requested = path.resolve(options.cwd ?? process.cwd(), expanded);
  const keep = { path: requested, requestedPath: requested, redirected: false };
  if (isInside(requested, home)) return { ...keep, gitWorkTree: null };
  const gitWorkTree = findGitWorkTree(path.dirname(requested));
  if (gitWorkTree === null || options.allowGitCwd === true) return { ...keep, gitWorkTree };
  const relative = path.normalize(expanded);
  const climbs = relative.split(path.sep).includes('..');
  const target = path.join(home, TRAJECTORIES_DIR, climbs ? path.basename(relative) : relative);
  return { path: target, requestedPath: requested, redirected: true, gitWorkTree };
}

/** Redirects announced so far in this process (one notice per requested → actual pair). */
const announced = new Set<string>();

function announce(where: TrajectoryPath, logger: FsPolicyLogger): void {
  const key = `${where.requestedPath}\0${where.path}`;
  if (announced.has(key)) return;
  announced.add(key);
  logger.warn(
    `trajectory ${where.requestedPath} would land inside the git work tree ${where.gitWorkTree ?? '?'}; ` +
      `writing it to ${where.path} instead (set allowGitCwd / agent.trajectory_allow_git_cwd to keep it there)`,
    { path: where.path, requestedPath: where.requestedPath, gitWorkTree: where.gitWorkTree },
  );
}

interface Prepared {
  readonly where: TrajectoryPath;
  readonly record: TrajectoryRecord;
  readonly append: AppendOptions;
}

function prepare(conversations: readonly ShareGptTurn[], options: SaveTrajectoryOptions): Prepared {
  if (typeof options.model !== 'string') throw new TypeError('trajectory: `model` must be a string');
  if (typeof options.completed !== 'boolean') throw new TypeError('trajectory: `completed` must be a boolean');
  const home = resolveHome(options.home, options.vars);
  const env = options.env ?? loadEnvironment(options.vars === undefined ? { home } : { home, env: options.vars });
  if (path.resolve(env.home) !== home) {
    throw new TypeError(`trajectory: options.env was loaded for ${env.home}, not for the home ${home}`);
  }
  const where = resolveTrajectoryPath(options);
  if (where.redirected) announce(where, options.logger ?? getLogger());
  const record: TrajectoryRecord = {
    conversations,
    timestamp: (options.now ?? new Date()).toISOString(),
    model: options.model,
    completed: options.completed,
  };
  // Links inside the home must stay inside it; elsewhere the caller chose the directory, and links above
  // the file's own directory are the operator's business.
  const root = isInside(where.path, home) ? home : path.dirname(where.path);
  const append: AppendOptions = { kind: 'trajectories', env, root, fsync: options.fsync === true };
  return { where, record, append };
}

function result(where: TrajectoryPath, r: AppendResult, createdDirs: readonly string[]): SaveTrajectoryResult {
  return {
    ...where,
    path: r.path,
    created: r.created,
    mode: r.mode,
    bytes: r.bytes,
    createdDirs: [...createdDirs, ...r.createdDirs],
    warnings: r.warnings,
  };
}

/**
 * Appends `{conversations, timestamp, model, completed}` as one JSON line to the trajectory file (see
 * {@link resolveTrajectoryPath}): created owner-only (`0600`; missing directories as kind `trajectories`),
 * an existing file keeps its mode, one `write(2)` per line so concurrent writers never interleave. Failures
 * throw the `FsPolicyError` of `@hermes/fs-policy` (path, errno code, step, uid and a one-line hint);
 * nothing is swallowed.
 */
export async function saveTrajectory(
  conversations: readonly ShareGptTurn[],
  options: SaveTrajectoryOptions,
): Promise<SaveTrajectoryResult> {
  const { where, record, append } = prepare(conversations, options);
  // fs-policy checks the directory chain on every append (a link leading out of the root is refused) and
  // secures every level it creates.
  return result(where, await appendJsonLine(where.path, record, append), []);
}

/** Synchronous form of {@link saveTrajectory} (shutdown paths). */
export function saveTrajectorySync(
  conversations: readonly ShareGptTurn[],
  options: SaveTrajectoryOptions,
): SaveTrajectoryResult {
  const { where, record, append } = prepare(conversations, options);
  return result(where, appendJsonLineSync(where.path, record, append), []);
}

/** The trajectory option `@hermes/config` carries (`agent.trajectory_allow_git_cwd`), read structurally. */
export interface TrajectoryConfigSource {
  readonly agent: { readonly trajectoryAllowGitCwd: boolean };
}

/** `{ allowGitCwd }` from a loaded `@hermes/config` (or anything of the same shape). */
export function trajectoryOptionsFromConfig(config: TrajectoryConfigSource): { allowGitCwd: boolean } {
  return { allowGitCwd: config.agent.trajectoryAllowGitCwd };
}
