import { defineConfig } from 'vitest/config';
import { verdictPathFor } from '../../tooling/scripts/vitest-verdict-reporter.mjs';

// The fs-policy suite a second time, every step made through /proc/self/fd instead of the native addon:
//   HERMES_FS_ANCHOR=procfd HERMES_TEST_JSON=<report.json> vitest run --config packages/fs-policy/vitest.procfd.config.mjs
// (`pnpm test` runs it in the default mode, native where the addon is built). Not a project of the root config.
// Under CI, HERMES_TEST_JSON names the JSON report and the verdict reporter writes its file next to it, for
// tooling/scripts/vitest-summary.mjs --also.
const jsonReport = process.env.HERMES_TEST_JSON;
if (process.env.HERMES_FS_ANCHOR !== 'procfd') {
  throw new Error('vitest.procfd.config.mjs: set HERMES_FS_ANCHOR=procfd (children inherit it, so the mode must come from the environment)');
}

export default defineConfig({
  test: {
    name: 'fs-policy (procfd)',
    root: import.meta.dirname,
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    reporters: jsonReport
      ? ['default', 'json', [`${import.meta.dirname}/../../tooling/scripts/vitest-verdict-reporter.mjs`, { outputFile: verdictPathFor(jsonReport) }]]
      : ['default'],
    ...(jsonReport ? { outputFile: { json: jsonReport } } : {}),
  },
});
