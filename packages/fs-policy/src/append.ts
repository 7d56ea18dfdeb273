/**
 * Appending records: one-shot appenders (privateAppend, appendJsonLine) and the append handle. Opening is in
 * append-open.ts, the record write (and the newline rule) in append-record.ts, the handle in append-handle.ts.
 */
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { type Plan, runAsync, runSync } from './internal/io.js';
import { bestEffort } from './internal/steps.js';
import { type AppendHandle, makeHandle } from './append-handle.js';
import { type AppendOpenInfo, type AppendOptions, openAppendPlan } from './append-open.js';
import { writeRecordPlan } from './append-record.js';
import { bytesOf, serializeJsonText } from './atomic.js';

export type { AppendHandle } from './append-handle.js';
export type { AppendOpenInfo, AppendOptions } from './append-open.js';

export interface AppendResult extends AppendOpenInfo {
  readonly bytes: number;
}

function* appendOncePlan(file: string, record: Uint8Array, options: AppendOptions, env: HermesEnvironment): Plan<AppendResult> {
  const opened = yield* openAppendPlan(file, options, env);
  try {
    const target = {
      fd: opened.fd,
      file: opened.path,
      sync: options.fsync === true,
      watch: opened.watch,
      tail: { readable: opened.readable, cleanEnd: undefined },
    };
    // The size the open's fstat saw: no second fstat before the last-byte check.
    const bytes = yield* writeRecordPlan(target, record, opened.size);
    return {
      path: opened.path,
      created: opened.created,
      mode: opened.mode,
      createdDirs: opened.createdDirs,
      warnings: opened.warnings,
      bytes,
    };
  } finally {
    yield* bestEffort([], 'close', opened.path, 'close', opened.fd);
  }
}

/** One JSON value as one line (serialised before any I/O). */
export function jsonLine(value: unknown, file: string): Buffer {
  return Buffer.from(serializeJsonText(value, file, { indent: 0 }), 'utf8');
}

/**
 * Appends one record to `file` as a single write: the file is created owner-only (the kind's mode,
 * exactly) if missing; an existing file must be a regular file of ours with one link and no group/other
 * write (checked on the descriptor; otherwise a typed error) and keeps the mode its owner chose; a symlink or
 * a FIFO is refused without blocking; a short write is an error, never a silently torn line. The record
 * starts on a new line: when the file does not end in one (a record cut short earlier), a newline is written
 * first, in the same write.
 */
export async function privateAppend(file: string, record: string | Uint8Array, options: AppendOptions): Promise<AppendResult> {
  const env = options.env ?? loadEnvironment();
  return runAsync(appendOncePlan(file, bytesOf(record, file), options, env));
}

/** Synchronous form of {@link privateAppend}. */
export function privateAppendSync(file: string, record: string | Uint8Array, options: AppendOptions): AppendResult {
  const env = options.env ?? loadEnvironment();
  return runSync(appendOncePlan(file, bytesOf(record, file), options, env));
}

/** Appends `value` as one JSON line (serialised first: a value that cannot be serialised writes nothing). */
export async function appendJsonLine(file: string, value: unknown, options: AppendOptions): Promise<AppendResult> {
  return privateAppend(file, jsonLine(value, file), options);
}

/** Synchronous form of {@link appendJsonLine}. */
export function appendJsonLineSync(file: string, value: unknown, options: AppendOptions): AppendResult {
  return privateAppendSync(file, jsonLine(value, file), options);
}

/** Opens `file` for repeated appends with privateAppend's guarantees; close it when done. */
export async function openAppendHandle(file: string, options: AppendOptions): Promise<AppendHandle> {
  const env = options.env ?? loadEnvironment();
  return makeHandle(await runAsync(openAppendPlan(file, options, env)), options);
}

/** Synchronous form of {@link openAppendHandle}. */
export function openAppendHandleSync(file: string, options: AppendOptions): AppendHandle {
  const env = options.env ?? loadEnvironment();
  return makeHandle(runSync(openAppendPlan(file, options, env)), options);
}
