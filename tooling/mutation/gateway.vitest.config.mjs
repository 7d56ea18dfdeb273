// The vitest config Stryker runs for @hermes/gateway: the package's own config, plus one fix for the sandbox.
// Stryker copies the repository into .stryker-tmp/sandbox-XXXXXX, created 0700; tests that run a fixture as
// another uid (a real unprivileged writer) need to traverse it, so the sandbox is opened to 0755 here.
import { chmodSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { mergeConfig } from 'vitest/config';
import config from '../../packages/gateway/vitest.config.ts';

const cwd = process.cwd();
if (basename(cwd).startsWith('sandbox-') && basename(dirname(cwd)) === '.stryker-tmp') chmodSync(cwd, 0o755);

// Left out: files whose checks run the built package in a child process (SIGTERM stops, other uids, umask
// scenarios, the spool attacker) — Stryker mutates the sources in this process, so they can never kill a mutant —
// and the stop-contract and SIGKILL loops, which spend 20 s each in children before one in-process recovery that
// the recovery tests already run on every mutant they cover.
export default mergeConfig(config, {
  test: {
    exclude: [
      'test/cross-uid.test.ts',
      'test/modes.test.ts',
      'test/sigterm.test.ts',
      'test/spool-attacks.test.ts',
      'test/stop-contract.test.ts',
      'test/stop-kill.test.ts',
    ],
  },
});
