import { defineConfig } from 'vitest/config';
import { verdictPathFor } from './tooling/scripts/vitest-verdict-reporter.mjs';

// Under CI (.ci/run) HERMES_TEST_JSON names the JSON report; the verdict reporter writes what that report leaves
// out (unhandled errors, hook errors, empty projects) next to it, for tooling/scripts/vitest-summary.mjs.
const jsonReport = process.env.HERMES_TEST_JSON;

export default defineConfig({
  test: {
    // vitest-summary.mjs reads this list (string globs only) to know which projects must have run.
    projects: ['packages/*/vitest.config.ts', 'apps/*/vitest.config.ts', 'tooling/*/vitest.config.ts'],
    reporters: jsonReport
      ? ['default', 'json', ['./tooling/scripts/vitest-verdict-reporter.mjs', { outputFile: verdictPathFor(jsonReport) }]]
      : ['default'],
    ...(jsonReport ? { outputFile: { json: jsonReport } } : {}),
    coverage: {
      provider: 'v8',
      include: ['packages/*/src/**', 'apps/*/src/**'],
      reporter: ['text-summary', 'text'],
    },
  },
});
