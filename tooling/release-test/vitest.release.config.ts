import { defineConfig } from 'vitest/config';
import { verdictPathFor } from '../scripts/vitest-verdict-reporter.mjs';

// Not a project of the root vitest.config.ts (its glob is tooling/*/vitest.config.ts): the release test takes
// minutes, so `pnpm test` leaves it out; `pnpm test:release` and CI (.ci/run) run it. Under CI, HERMES_TEST_JSON
// names its JSON report, and the verdict reporter writes what that report leaves out next to it, for
// tooling/scripts/vitest-summary.mjs --also.
const jsonReport = process.env.HERMES_TEST_JSON;

export default defineConfig({
  test: {
    name: 'release',
    root: import.meta.dirname,
    include: ['test/**/*.test.ts'],
    testTimeout: 1_800_000,
    hookTimeout: 1_800_000,
    reporters: jsonReport
      ? ['default', 'json', [`${import.meta.dirname}/../scripts/vitest-verdict-reporter.mjs`, { outputFile: verdictPathFor(jsonReport) }]]
      : ['default'],
    ...(jsonReport ? { outputFile: { json: jsonReport } } : {}),
  },
});
