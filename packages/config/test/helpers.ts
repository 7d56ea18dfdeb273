import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { ConfigError } from '../src/index.js';

const made: string[] = [];

/** A fresh real directory under the OS temp dir, removed after the test. */
export async function tempHome(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'hermes-config-'));
  made.push(dir);
  return dir;
}

afterEach(async () => {
  await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Run `fn` and return the ConfigError it throws; fail when it throws something else or nothing. */
export function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

/** Await `promise` and return the ConfigError it rejects with. */
export async function configErrorOfAsync(promise: Promise<unknown>): Promise<ConfigError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError, the promise resolved');
}
