import { createRequire } from 'node:module';
import { describe, it } from 'vitest';
import { platformPackage, type NativeBinding } from '../src/native.js';

/** The addon loaded directly from the platform package (whatever mode the package is in), or the reason it is not. */
export function loadAddon(): { binding?: NativeBinding; why?: string } {
  const pkg = platformPackage();
  if (pkg === undefined) return { why: `no native build for ${process.platform}-${process.arch}` };
  try {
    return { binding: createRequire(import.meta.url)(pkg) as NativeBinding };
  } catch (err) {
    return { why: `${pkg} did not load: ${err instanceof Error ? err.message : String(err)}` };
  }
}

const inCI = process.env.CI === 'true' || process.env.CI === '1';

/**
 * `describe` for tests of the addon. Where it should exist (linux-x64-gnu) and does not: skipped outside CI
 * (run `pnpm -C packages/fs-policy-linux-x64-gnu build`), a failure under CI (the build makes it there).
 */
export function describeNative(title: string, fn: (b: NativeBinding) => void): void {
  const { binding, why } = loadAddon();
  if (binding !== undefined) {
    describe(title, () => {
      fn(binding);
    });
  } else if (inCI && platformPackage() !== undefined) {
    describe(title, () => {
      it('has the addon', () => {
        throw new Error(`${title}: ${why ?? 'addon missing'}; the build (packages/fs-policy/native/build.mjs) makes it`);
      });
    });
  } else {
    describe.skip(`${title} [skipped: ${why ?? 'addon missing'}]`, () => {
      /* nothing */
    });
  }
}

/** Runs `fn`, returns what it threw (an error with a code), or fails. */
export function thrown(fn: () => unknown): NodeJS.ErrnoException {
  try {
    fn();
  } catch (err) {
    return err as NodeJS.ErrnoException;
  }
  throw new Error('expected a throw');
}
