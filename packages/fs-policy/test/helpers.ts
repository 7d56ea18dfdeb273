import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempRoot } from '@hermes/test-utils';
import { FsPolicyError, loadEnvironment, type HermesEnvironment } from '../src/index.js';
import { setFaultHook, type Req } from '../src/internal/io.js';

export const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** An unmanaged environment rooted at a fresh temp home (umask 022 as seen by the policy). */
export function tempEnv(options: { managed?: boolean; homeMode?: string } = {}): HermesEnvironment {
  const home = path.join(tempRoot(), 'home');
  fs.mkdirSync(home, { mode: 0o700 });
  return loadEnvironment({
    home,
    env: {
      HOME: process.env.HOME,
      HERMES_MANAGED: options.managed === true ? 'nixos' : 'false',
      HERMES_HOME_MODE: options.homeMode,
    },
    umask: 0o022,
  });
}

/** Every entry of a directory (names), sorted. */
export function ls(dir: string): string[] {
  return fs.readdirSync(dir).sort();
}

/** Runs `fn` and returns the FsPolicyError it throws (any other outcome fails the test). */
export function caught(fn: () => unknown): FsPolicyError {
  try {
    fn();
  } catch (e) {
    if (e instanceof FsPolicyError) return e;
    throw e;
  }
  throw new Error('expected an FsPolicyError');
}

/** Every request the port makes while `fn` runs, in order (observed only: each is made as it would be). */
export function requestsOf(fn: () => unknown): Req[] {
  const reqs: Req[] = [];
  setFaultHook((req) => {
    reqs.push(req);
    return undefined;
  });
  try {
    fn();
  } finally {
    setFaultHook(undefined);
  }
  return reqs;
}
