/**
 * Setup file of every vitest project that makes temp roots: removes them when the test file ends. A test file runs
 * in a worker that vitest stops without an `exit` event, so the exit handler of `tempRoot` alone leaks every root.
 * Registered before the file's own hooks, this `afterAll` runs after them (vitest runs after-hooks in reverse
 * order): daemons, mounts and users a file cleans up are gone before its roots are removed.
 */
import { afterAll } from 'vitest';
import { removeTempRoots } from './index.js';

afterAll(() => {
  const left = removeTempRoots();
  if (left.length > 0) console.warn(`test-utils: could not remove ${left.join(', ')}`);
});
