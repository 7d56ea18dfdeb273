// pnpm mutate:fs-policy — mutants of @hermes/fs-policy's write and append paths, and the directory creation,
// syscall port and resolver they run on.
import { packageConfig } from './shared.mjs';

export default packageConfig({
  name: 'fs-policy',
  mutate: [
    'packages/fs-policy/src/atomic.ts',
    'packages/fs-policy/src/append.ts',
    'packages/fs-policy/src/mkdir.ts',
    'packages/fs-policy/src/file.ts',
    // the syscall port and the descriptor-anchored resolver every write and append runs through
    'packages/fs-policy/src/internal/*.ts',
  ],
});
