import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  atomicWrite,
  atomicWriteSync,
  expandTilde,
  FsPolicyError,
  loadEnvironment,
  secureMkdir,
  secureMkdirSync,
  type EnvSource,
  type HermesEnvironment,
  type WriteResult,
} from '@hermes/fs-policy';
import { redactSecrets, redactValue } from '@hermes/redact';
import { fromFsError, SaveError } from './errors.js';
import { defaultFileName, FORMATS, formatFromName, resolveExplicitName, savedDirOf } from './paths.js';
import { renderHtml } from './render/html.js';
import { renderMarkdown } from './render/markdown.js';
import { assertNotEmpty, normalizeInput, serializeSnapshot } from './snapshot.js';
import type { NormalizedSnapshot, SaveFormat, SaveInput, SaveOptions, SaveResult } from './types.js';

/** The artifact kind of every snapshot (0700 dir not honouring HERMES_HOME_MODE; 0600 file, re-tightened). */
const KIND = 'saved-sessions';

/** How many `_<n>` names of one second are tried before giving up. */
const MAX_SAME_SECOND = 1000;

function isHermesEnvironment(env: EnvSource | HermesEnvironment): env is HermesEnvironment {
  const candidate = env as Partial<Record<keyof HermesEnvironment, unknown>>;
  return typeof candidate.home === 'string' && typeof candidate.managed === 'object' && typeof candidate.homeMode === 'object';
}

/** Everything decided before the first filesystem call: the bytes, the format, where they may go. */
interface Prepared {
  readonly env: HermesEnvironment;
  readonly envSource: EnvSource | undefined;
  readonly format: SaveFormat;
  readonly data: Buffer;
  readonly redacted: boolean;
  readonly sessionsDir: string;
  readonly savedDir: string;
  readonly filename: string | undefined;
  readonly now: Date;
}

function resolveEnvironment(home: unknown, env: EnvSource | HermesEnvironment | undefined): {
  env: HermesEnvironment;
  source: EnvSource | undefined;
} {
  if (typeof home !== 'string' || home.trim() === '') {
    throw new SaveError({ code: 'EINVALID_OPTIONS', reason: 'the Hermes home (options.home) is required' });
  }
  if (env !== undefined && isHermesEnvironment(env)) {
    const wanted = path.resolve(expandTilde(home));
    if (path.resolve(env.home) !== wanted) {
      throw new SaveError({
        code: 'EINVALID_OPTIONS',
        reason: `options.env was resolved for ${env.home}, not for the home ${wanted}`,
      });
    }
    return { env, source: undefined };
  }
  try {
    return { env: loadEnvironment({ home, env: env ?? process.env }), source: env };
  } catch (err) {
    throw fromFsError(err, undefined);
  }
}

function chooseFormat(format: unknown, filename: string | undefined): SaveFormat {
  if (format === undefined) return (filename === undefined ? undefined : formatFromName(filename)) ?? 'json';
  if (typeof format === 'string' && (FORMATS as readonly string[]).includes(format)) return format as SaveFormat;
  throw new SaveError({
    code: 'EINVALID_FORMAT',
    reason: `unknown format ${typeof format === 'string' ? JSON.stringify(format) : typeof format}; expected one of: ${FORMATS.join(', ')}`,
  });
}

function render(snapshot: NormalizedSnapshot, format: SaveFormat, json: string): string {
  if (format === 'json') return json;
  try {
    return format === 'md' ? renderMarkdown(snapshot) : renderHtml(snapshot);
  } catch (err) {
    throw new SaveError({
      code: 'ESERIALIZE',
      reason: `the conversation cannot be rendered as ${format}: ${err instanceof Error ? err.message : String(err)}`,
      cause: err,
    });
  }
}

/** The bytes of a snapshot: the normalised input, serialised, optionally redacted, rendered. */
interface Content {
  readonly format: SaveFormat;
  readonly text: string;
  readonly redacted: boolean;
}

function buildContent(input: SaveInput, format: SaveFormat, redact: boolean): Content {
  const snapshot = normalizeInput(input);
  assertNotEmpty(snapshot);
  // Serialising first proves the value is plain data (no BigInt, no cycle, no throwing toJSON). Every
  // format then works from that JSON's data, so all three show the same thing, and redaction sees every
  // string that will be written (class instances it would not walk are plain objects by then).
  let json = serializeSnapshot(snapshot);
  let data = JSON.parse(json) as NormalizedSnapshot;
  if (redact) {
    data = redactValue(data, redactSecrets);
    json = serializeSnapshot(data);
  }
  return { format, text: render(data, format, json), redacted: redact };
}

/**
 * Renders a conversation exactly as {@link saveConversation} would write it, without writing anything
 * (same validation, empty rule, serialisation checks and redaction).
 */
export function renderConversation(
  input: SaveInput,
  format: SaveFormat = 'json',
  options: { readonly redact?: boolean } = {},
): string {
  return buildContent(input, chooseFormat(format, undefined), options.redact === true).text;
}

/**
 * Validation, serialisation, redaction and rendering: everything that can fail without touching the disk
 * fails here, so a bad value never leaves anything behind.
 */
function prepare(input: SaveInput, options: SaveOptions): Prepared {
  const filename = options.filename;
  if (filename !== undefined && typeof filename !== 'string') {
    throw new SaveError({ code: 'EINVALID_FILENAME', reason: 'options.filename must be a string' });
  }
  const now = options.now ?? new Date();
  if (!(now instanceof Date) || Number.isNaN(now.getTime())) {
    throw new SaveError({ code: 'EINVALID_OPTIONS', reason: 'options.now must be a valid Date' });
  }
  const content = buildContent(input, chooseFormat(options.format, filename), options.redact === true);
  const { env, source } = resolveEnvironment(options.home, options.env);
  return {
    env,
    envSource: source,
    format: content.format,
    data: Buffer.from(content.text, 'utf8'),
    redacted: content.redacted,
    sessionsDir: path.join(env.home, 'sessions'),
    savedDir: savedDirOf(env.home),
    filename,
    now,
  };
}

function result(prepared: Prepared, written: WriteResult): SaveResult {
  return {
    path: written.path,
    format: prepared.format,
    bytes: written.bytes,
    mode: written.mode,
    redacted: prepared.redacted,
    warnings: written.warnings,
  };
}

function isExists(err: unknown): boolean {
  return err instanceof FsPolicyError && err.code === 'EEXIST';
}

function exhausted(prepared: Prepared): SaveError {
  return new SaveError({
    code: 'ENAMES_EXHAUSTED',
    reason: `${MAX_SAME_SECOND} snapshots already carry the name ${defaultFileName(prepared.now, prepared.format)}; pass a file name`,
    path: path.join(prepared.savedDir, defaultFileName(prepared.now, prepared.format)),
  });
}

/**
 * The explicit file name, resolved and checked before anything is created: a name that escapes
 * `sessions/saved/` is refused without creating the directory.
 */
function explicitTarget(prepared: Prepared): string | undefined {
  if (prepared.filename === undefined) return undefined;
  let realSaved = prepared.savedDir;
  try {
    // By path, on purpose and harmless: the real path only lets an absolute name spelled through the real
    // location of sessions/saved/ be accepted (and rewritten below savedDir). The write itself goes through
    // fs-policy with `root: savedDir`, through descriptors, so whatever a member swaps here cannot move it.
    realSaved = fs.realpathSync(prepared.savedDir);
  } catch {
    // Not there yet: only the lexical spelling can name it.
  }
  return resolveExplicitName(prepared.filename, prepared.savedDir, realSaved, prepared.envSource);
}

/**
 * Saves a conversation snapshot under `<home>/sessions/saved/` and resolves to where it went.
 *
 * - `sessions/` is created as the `sessions` kind and `sessions/saved/` as the `saved-sessions` kind, so
 *   fs-policy decides every mode (0700 unmanaged; managed: the setgid parent and umask decide); the snapshot
 *   is written atomically and ends 0600.
 * - Default name: `hermes_conversation_%Y%m%d_%H%M%S.<fmt>` (local time), created with no-clobber semantics
 *   (`_2`, `_3`, … for more saves in the same second). An explicit `filename` replaces an existing file.
 * - Every failure is a {@link SaveError}; filesystem failures carry the `FsPolicyError` as `cause` and keep
 *   its `code`. On failure nothing is left behind: no partial file, no temp file, a replaced file intact.
 */
export async function saveConversation(input: SaveInput, options: SaveOptions): Promise<SaveResult> {
  const prepared = prepare(input, options);
  const { env, savedDir } = prepared;
  let target = explicitTarget(prepared);
  try {
    await secureMkdir(prepared.sessionsDir, 'sessions', { env });
    await secureMkdir(savedDir, KIND, { env });
    if (target !== undefined) {
      return result(prepared, await atomicWrite(target, prepared.data, { kind: KIND, env, root: savedDir }));
    }
    for (let n = 1; n <= MAX_SAME_SECOND; n++) {
      target = path.join(savedDir, defaultFileName(prepared.now, prepared.format, n));
      try {
        return result(prepared, await atomicWrite(target, prepared.data, { kind: KIND, env, root: savedDir, overwrite: false }));
      } catch (err) {
        if (!isExists(err)) throw err;
      }
    }
    throw exhausted(prepared);
  } catch (err) {
    throw fromFsError(err, target);
  }
}

/** Synchronous form of {@link saveConversation} (for exit and signal paths). */
export function saveConversationSync(input: SaveInput, options: SaveOptions): SaveResult {
  const prepared = prepare(input, options);
  const { env, savedDir } = prepared;
  let target = explicitTarget(prepared);
  try {
    secureMkdirSync(prepared.sessionsDir, 'sessions', { env });
    secureMkdirSync(savedDir, KIND, { env });
    if (target !== undefined) {
      return result(prepared, atomicWriteSync(target, prepared.data, { kind: KIND, env, root: savedDir }));
    }
    for (let n = 1; n <= MAX_SAME_SECOND; n++) {
      target = path.join(savedDir, defaultFileName(prepared.now, prepared.format, n));
      try {
        return result(prepared, atomicWriteSync(target, prepared.data, { kind: KIND, env, root: savedDir, overwrite: false }));
      } catch (err) {
        if (!isExists(err)) throw err;
      }
    }
    throw exhausted(prepared);
  } catch (err) {
    throw fromFsError(err, target);
  }
}
