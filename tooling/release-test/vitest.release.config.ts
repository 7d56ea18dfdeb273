import { defineConfig } from 'vitest/config';

// Not a project of the root vitest.config.ts (its glob is tooling/*/vitest.config.ts): the release test takes
// minutes, so `pnpm test` leaves it out; `pnpm test:release` and CI (.ci/run) run it.
const jsonReport = process.env.HERMES_TEST_JSON;

export default defineConfig({
  test: {
    name: 'release',
    root: import.meta.dirname,
    include: ['test/**/*.test.ts'],
    testTimeout: 1_800_000,
    hookTimeout: 1_800_000,
    reporters: jsonReport ? ['default', 'json'] : ['default'],
    ...(jsonReport ? { outputFile: { json: jsonReport } } : {}),
  },
});
