import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import { consumer } from '../index.js';

const root = path.resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const banned = fs.readFileSync(fileURLToPath(new URL('./fixtures/banned-calls.txt', import.meta.url)), 'utf8');
const allowed = fs.readFileSync(fileURLToPath(new URL('./fixtures/allowed-calls.txt', import.meta.url)), 'utf8');

/** The consumer preset scoped exactly as the root config scopes it, without type information. */
function linter(): ESLint {
  return new ESLint({
    cwd: root,
    overrideConfigFile: true,
    overrideConfig: [
      { files: ['**/*.ts'], languageOptions: { parser: tseslint.parser, parserOptions: { sourceType: 'module' } } },
      consumer({ files: ['packages/*/src/**/*.ts', 'apps/*/src/**/*.ts'], ignores: ['packages/fs-policy/**'] }),
    ],
  });
}

async function reportedLines(code: string, file: string): Promise<number[]> {
  const [result] = await linter().lintText(code, { filePath: path.join(root, file) });
  if (result === undefined) throw new Error('no lint result');
  const fatal = result.messages.filter((m) => m.fatal === true);
  expect(fatal).toEqual([]);
  return result.messages.filter((m) => m.ruleId === 'hermes/no-permission-fs').map((m) => m.line);
}

describe('consumer preset: hermes/no-permission-fs', () => {
  it('reports every banned call in a consumer package (each line of the fixture from line 3 on)', async () => {
    const lines = await reportedLines(banned, 'packages/gateway/src/fixture.ts');
    // Lines 1-2 and 6-7 are harmless imports/declarations; every other line holds one banned call.
    const expected = [
      3, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33,
      34, 35, 36, 37, 38, 39,
    ];
    expect([...new Set(lines)].sort((a, b) => a - b)).toEqual(expected);
    expect(lines.filter((l) => l === 3)).toHaveLength(2); // chmodSync and chown imported by name
  });

  it('applies to apps too', async () => {
    expect((await reportedLines(banned, 'apps/hermes-fs/src/fixture.ts')).length).toBeGreaterThan(30);
  });

  it('exempts @hermes/fs-policy, the owner of permission policy', async () => {
    expect(await reportedLines(banned, 'packages/fs-policy/src/fixture.ts')).toEqual([]);
  });

  it('does not cover tests (they may chmod their fixtures)', async () => {
    expect(await reportedLines(banned, 'packages/gateway/test/fixture.ts')).toEqual([]);
  });

  it('does not report ordinary fs use', async () => {
    expect(await reportedLines(allowed, 'packages/gateway/src/fixture.ts')).toEqual([]);
  });

  it('the root eslint.config.js enables the rule for consumers and not for fs-policy', async () => {
    const eslint = new ESLint({ cwd: root });
    const consumerConfig = (await eslint.calculateConfigForFile(path.join(root, 'packages/gateway/src/index.ts'))) as {
      rules: Record<string, unknown>;
    };
    const ownerConfig = (await eslint.calculateConfigForFile(path.join(root, 'packages/fs-policy/src/index.ts'))) as {
      rules: Record<string, unknown>;
    };
    expect(consumerConfig.rules['hermes/no-permission-fs']).toEqual([2]);
    expect(ownerConfig.rules['hermes/no-permission-fs']).toBeUndefined();
  });
});
