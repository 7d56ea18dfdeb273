// The vitest config Stryker runs for @hermes/fs-policy: the package's own config, plus one fix for the sandbox.
// Stryker copies the repository into .stryker-tmp/sandbox-XXXXXX, created 0700; tests that run a fixture as
// another uid (a real unprivileged writer) need to traverse it, so the sandbox is opened to 0755 here.
import { chmodSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { mergeConfig } from 'vitest/config';
import config from '../../packages/fs-policy/vitest.config.ts';

const cwd = process.cwd();
if (basename(cwd).startsWith('sandbox-') && basename(dirname(cwd)) === '.stryker-tmp') chmodSync(cwd, 0o755);

// Files whose every check runs the built package in a child process (attackers, many writers, other uids, umask
// scenarios): Stryker mutates the sources in this process, so they can never kill a mutant and only cost time.
export default mergeConfig(config, {
  test: { exclude: ['test/attacks.test.ts', 'test/concurrency.test.ts', 'test/cross-uid.test.ts', 'test/modes.test.ts'] },
});
