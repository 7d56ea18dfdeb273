import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import hermes from './plugin.js';

/**
 * The base flat config every workspace uses: typescript-eslint strictTypeChecked + stylisticTypeChecked
 * with the project service. Plain JS files (fixtures, scripts) are linted without type information.
 * @param {{ tsconfigRootDir: string }} options
 * @returns {import('eslint').Linter.Config[]}
 */
export function base({ tsconfigRootDir }) {
  return [
    { ignores: ['**/dist/**', '**/node_modules/**', '**/coverage/**', '**/.turbo/**', '**/.cache/**'] },
    js.configs.recommended,
    ...tseslint.configs.strictTypeChecked,
    ...tseslint.configs.stylisticTypeChecked,
    {
      languageOptions: {
        parserOptions: { projectService: true, tsconfigRootDir },
      },
      linterOptions: { reportUnusedDisableDirectives: 'error' },
      rules: {
        '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
        '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
        '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
        eqeqeq: ['error', 'always'],
      },
    },
    {
      files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
      ...tseslint.configs.disableTypeChecked,
      languageOptions: {
        ...tseslint.configs.disableTypeChecked.languageOptions,
        globals: {
          process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly',
          setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly',
          performance: 'readonly', structuredClone: 'readonly', AbortController: 'readonly',
          SharedArrayBuffer: 'readonly', Atomics: 'readonly', Int32Array: 'readonly',
        },
      },
    },
  ];
}

/**
 * The consumer preset: reports every permission-setting fs call (chmod/chown families in every form,
 * mkdir with a mode, open with a create mode, writeFile-style calls with a `mode`, process.umask).
 * Apply it to the sources of every package except @hermes/fs-policy.
 * @param {{ files: string[], ignores?: string[] }} scope
 * @returns {import('eslint').Linter.Config}
 */
export function consumer({ files, ignores = [] }) {
  return {
    name: 'hermes/consumer',
    files,
    ignores,
    plugins: { hermes },
    rules: { 'hermes/no-permission-fs': 'error' },
  };
}

export { hermes as plugin };
