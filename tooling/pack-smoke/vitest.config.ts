import { defineProject } from 'vitest/config';

export default defineProject({
  test: { name: 'pack-smoke', include: ['test/**/*.test.ts'], testTimeout: 600_000, hookTimeout: 600_000 },
});
