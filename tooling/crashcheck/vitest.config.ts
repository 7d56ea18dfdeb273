import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'crashcheck',
    include: ['test/**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 300_000,
  },
});
