// pnpm mutate:gateway — mutants of @hermes/gateway's flush and recovery paths.
import { packageConfig } from './shared.mjs';

export default packageConfig({
  name: 'gateway',
  mutate: [
    'packages/gateway/src/flush.ts',
    'packages/gateway/src/payload.ts',
    'packages/gateway/src/recover.ts',
    'packages/gateway/src/recover-pass.ts',
    'packages/gateway/src/recover-batch.ts',
    'packages/gateway/src/batch-write.ts',
    'packages/gateway/src/lock.ts',
    'packages/gateway/src/read.ts',
    'packages/gateway/src/ordering.ts',
    'packages/gateway/src/names.ts',
    'packages/gateway/src/spool.ts',
    'packages/gateway/src/shutdown.ts',
    'packages/gateway/src/jobs.ts',
    'packages/gateway/src/salvage.ts',
    'packages/gateway/src/snapshot.ts',
    'packages/gateway/src/errors.ts',
  ],
});
