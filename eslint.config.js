import { base, consumer } from '@hermes/eslint-config';

export default [
  ...base({ tsconfigRootDir: import.meta.dirname }),
  // Permission policy has one owner: every other package's sources are kept off permission-setting fs APIs.
  consumer({
    files: ['packages/*/src/**/*.ts', 'apps/*/src/**/*.ts'],
    ignores: ['packages/fs-policy/**'],
  }),
];
