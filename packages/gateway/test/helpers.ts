import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempRoot } from '@hermes/test-utils';
import { afterEach } from 'vitest';
import type { GatewayLogger, LogFields } from '../src/index.js';

const roots: string[] = [];

/** A fresh temp root (0755, so other test uids can traverse it), removed after the test. */
export function tempDir(): string {
  const dir = tempRoot('hermes-gw-');
  roots.push(dir);
  return dir;
}

afterEach(() => {
  for (const dir of roots.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

export function fixture(name: string): string {
  return fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
}

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  fields: LogFields | undefined;
}

/** A logger that records every line. */
export function memoryLogger(): GatewayLogger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (message: string, fields?: LogFields): void => {
      lines.push({ level, message, fields });
    };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** Sorted entry names of a directory ([] when it does not exist). */
export function names(dir: string): string[] {
  try {
    return fs.readdirSync(dir).sort();
  } catch {
    return [];
  }
}

export function readJson(file: string): unknown {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as unknown;
}

export function spoolDir(home: string): string {
  return path.join(home, 'pending_messages');
}

/** Writes a spool file by hand (as the Python reference, or an operator, would have). */
export function writeSpoolFile(home: string, name: string, content: string | Buffer): string {
  const dir = spoolDir(home);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  return file;
}

/**
 * The logical path of a path a fault hook sees: a flush writes its payloads relative to the held spool's
 * descriptor (`/proc/self/fd/<fd>/<name>`), which is `<dir>/<name>` here (the tests hold no other directory
 * while a flush runs). Any other path is returned as it is.
 */
export function inSpool(p: string, dir: string): string {
  return /^\/proc\/self\/fd\/\d+\/[^/]+$/.test(p) ? path.join(dir, path.basename(p)) : p;
}
