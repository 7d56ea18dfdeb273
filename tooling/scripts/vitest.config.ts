import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'scripts',
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    // Removes the temp roots of each test file when it ends (tooling/test-utils/src/vitest-setup.ts).
    setupFiles: ['../../tooling/test-utils/src/vitest-setup.ts'],
  },
});
