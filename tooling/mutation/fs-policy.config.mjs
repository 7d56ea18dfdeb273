// pnpm mutate:fs-policy — mutants of @hermes/fs-policy's write and append paths (and the directory creation
// and syscall port they run on).
import { packageConfig } from './shared.mjs';

export default packageConfig({
  name: 'fs-policy',
  mutate: [
    'packages/fs-policy/src/atomic.ts',
    'packages/fs-policy/src/append.ts',
    'packages/fs-policy/src/mkdir.ts',
    'packages/fs-policy/src/file.ts',
    'packages/fs-policy/src/internal/io.ts',
    'packages/fs-policy/src/internal/steps.ts',
  ],
});
