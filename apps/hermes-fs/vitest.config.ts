import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'hermes-fs',
    // Removes the temp roots of each test file when it ends (tooling/test-utils/src/vitest-setup.ts).
    setupFiles: ['../../tooling/test-utils/src/vitest-setup.ts'],
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
