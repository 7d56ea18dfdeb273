import { execFileSync } from 'node:child_process';
import { link, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ConfigError, defaultConfig, loadConfig, loadConfigSync, type HermesConfig } from '../src/index.js';
import { configErrorOf, configErrorOfAsync, tempHome } from './helpers.js';

const DEFAULTS: HermesConfig = {
  moa: { saveTraces: false, traceDir: null, privacyFilter: 'off' },
  agent: { trajectoryAllowGitCwd: false },
  gateway: {
    pending: { maxFiles: 10000, maxBytes: 268435456, badRetentionDays: 30, snapshotRetentionDays: 30 },
    shutdownFlushBudgetMs: 5000,
  },
};

describe('defaults', () => {
  test('defaultConfig() is the documented table and a fresh object each time', () => {
    expect(defaultConfig()).toStrictEqual(DEFAULTS);
    expect(defaultConfig()).not.toBe(defaultConfig());
  });

  test('a missing config.yaml yields the defaults with source "default" (async and sync)', async () => {
    const home = await tempHome();
    const file = join(home, 'config.yaml');
    const expected = { config: DEFAULTS, raw: {}, warnings: [], source: 'default', file };
    expect(await loadConfig(home)).toStrictEqual(expected);
    expect(loadConfigSync(home)).toStrictEqual(expected);
  });

  test('a missing home directory is a missing file, not an error', async () => {
    const home = join(await tempHome(), 'not', 'there');
    const loaded = await loadConfig(home);
    expect(loaded.source).toBe('default');
    expect(loaded.config).toStrictEqual(DEFAULTS);
  });

  test.each([
    ['an empty file', ''],
    ['a file of whitespace', '\n\n   \n'],
    ['a comment-only file', '# nothing configured yet\n# moa:\n#   save_traces: true\n'],
    ['a bare document marker', '---\n'],
    ['an explicit null document', '~\n'],
    ['an empty file with a BOM', '\uFEFF'],
  ])('%s yields the defaults with source "file"', async (_name, text) => {
    const home = await tempHome();
    const file = join(home, 'config.yaml');
    await writeFile(file, text);
    const expected = { config: DEFAULTS, raw: {}, warnings: [], source: 'file', file };
    expect(await loadConfig(home)).toStrictEqual(expected);
    expect(loadConfigSync(home)).toStrictEqual(expected);
  });

  test('empty sections and keys without a value take the defaults', async () => {
    const home = await tempHome();
    await writeFile(
      join(home, 'config.yaml'),
      'moa:\nagent: ~\ngateway:\n  pending:\n    max_files:\n  shutdown_flush_budget_ms: null\n',
    );
    const loaded = await loadConfig(home);
    expect(loaded.config).toStrictEqual(DEFAULTS);
    expect(loaded.warnings).toStrictEqual([]);
    expect(loaded.raw).toStrictEqual({
      moa: null,
      agent: null,
      gateway: { pending: { max_files: null }, shutdown_flush_budget_ms: null },
    });
  });
});

describe('loading a file', () => {
  const FULL = [
    'moa:',
    '  save_traces: true',
    '  trace_dir: ~/audit/moa',
    '  privacy_filter: display',
    'agent:',
    '  trajectory_allow_git_cwd: true',
    'gateway:',
    '  pending:',
    '    max_files: 500',
    '    max_bytes: 1048576',
    '    bad_retention_days: 7.5',
    '    snapshot_retention_days: 0',
    '  shutdown_flush_budget_ms: 250',
    '',
  ].join('\n');
  const FULL_CONFIG: HermesConfig = {
    moa: { saveTraces: true, traceDir: '~/audit/moa', privacyFilter: 'display' },
    agent: { trajectoryAllowGitCwd: true },
    gateway: {
      pending: { maxFiles: 500, maxBytes: 1048576, badRetentionDays: 7.5, snapshotRetentionDays: 0 },
      shutdownFlushBudgetMs: 250,
    },
  };

  test('every validated key is read, typed and camelCased', async () => {
    const home = await tempHome();
    await writeFile(join(home, 'config.yaml'), FULL);
    const loaded = await loadConfig(home);
    expect(loaded.config).toStrictEqual(FULL_CONFIG);
    expect(loaded.warnings).toStrictEqual([]);
    expect(loaded.source).toBe('file');
    expect(loadConfigSync(home)).toStrictEqual(loaded);
  });

  test('trace_dir is kept exactly as written: no ~ or $VAR expansion', async () => {
    const home = await tempHome();
    await writeFile(join(home, 'config.yaml'), 'moa:\n  trace_dir: "$HOME/traces "\n');
    expect((await loadConfig(home)).config.moa.traceDir).toBe('$HOME/traces ');
  });

  test('options.file: relative to home, or absolute', async () => {
    const home = await tempHome();
    await mkdir(join(home, 'profiles', 'work'), { recursive: true });
    await writeFile(join(home, 'profiles', 'work', 'alt.yaml'), 'moa:\n  save_traces: true\n');
    const relative = await loadConfig(home, { file: 'profiles/work/alt.yaml' });
    expect(relative.file).toBe(join(home, 'profiles', 'work', 'alt.yaml'));
    expect(relative.config.moa.saveTraces).toBe(true);
    const absolute = loadConfigSync('/nonexistent-home', { file: join(home, 'profiles', 'work', 'alt.yaml') });
    expect(absolute.config.moa.saveTraces).toBe(true);
  });

  test('a BOM-prefixed file parses, and line numbers still count from the first line', async () => {
    const home = await tempHome();
    const file = join(home, 'config.yaml');
    await writeFile(file, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('moa:\n  save_traces: true\n')]));
    const loaded = await loadConfig(home);
    expect(loaded.config.moa.saveTraces).toBe(true);
    expect(loaded.raw).toStrictEqual({ moa: { save_traces: true } });

    await writeFile(file, '\uFEFFmoa:\n  save_traces: maybe\n');
    const error = await configErrorOfAsync(loadConfig(home));
    expect(error.message).toBe(`${file}: moa.save_traces: expected a boolean, got "maybe" (line 2, column 16)`);
    expect(error.line).toBe(2);
  });

  test('errors name the absolute path of the file', async () => {
    const home = await tempHome();
    const file = join(home, 'config.yaml');
    await writeFile(file, 'gateway:\n  shutdown_flush_budget_ms: 0\n');
    const error = await configErrorOfAsync(loadConfig(home));
    expect(error.file).toBe(file);
    expect(error.message).toBe(
      `${file}: gateway.shutdown_flush_budget_ms: expected a positive integer, got 0 (line 2, column 29)`,
    );
    expect(configErrorOf(() => loadConfigSync(home)).message).toBe(error.message);
  });

  test('a config.yaml that cannot be read is a read error, not the defaults', async () => {
    const home = await tempHome();
    const file = join(home, 'config.yaml');
    await mkdir(file);
    const error = await configErrorOfAsync(loadConfig(home));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.kind).toBe('read');
    expect(error.file).toBe(file);
    expect(error.keyPath).toBe('');
    expect(error.expected).toBe('a readable file');
    expect(error.message).toBe(`${file}: cannot read: refusing to read ${file}: it is a directory [EISDIR at verify: ${file}]`);
    expect((error.cause as NodeJS.ErrnoException).code).toBe('EISDIR');
    expect(configErrorOf(() => loadConfigSync(home)).kind).toBe('read');
  });

  test('a FIFO planted as config.yaml is a read error at once, never a hang (sync and async)', async () => {
    const home = await tempHome();
    const file = join(home, 'config.yaml');
    execFileSync('mkfifo', [file]);
    const error = await configErrorOfAsync(loadConfig(home));
    expect(error.kind).toBe('read');
    expect(error.message).toBe(`${file}: cannot read: refusing to read ${file}: it is a FIFO, not a regular file [ENOTREGULAR at verify: ${file}]`);
    expect(configErrorOf(() => loadConfigSync(home)).message).toBe(error.message);
  }, 10_000);

  test('a config.yaml linked into an allowed prefix (the NixOS store) is read through the link', async () => {
    const home = await tempHome();
    const store = await tempHome();
    await writeFile(join(store, 'config.yaml'), 'model:\n  default: store-model\n');
    await symlink(join(store, 'config.yaml'), join(home, 'config.yaml'));
    const loaded = loadConfigSync(home, { linkPrefixes: [store] });
    expect(loaded.source).toBe('file');
    expect(loaded.raw).toStrictEqual({ model: { default: 'store-model' } });
    expect((await loadConfig(home, { linkPrefixes: [store] })).raw).toStrictEqual(loaded.raw);
  });

  test('a config.yaml link that leads anywhere but the allowed prefixes is reported, never read through', async () => {
    const home = await tempHome();
    const elsewhere = await tempHome();
    const file = join(home, 'config.yaml');
    await writeFile(join(elsewhere, 'config.yaml'), 'model:\n  default: LINKED-CONTENT\n');
    await symlink(join(elsewhere, 'config.yaml'), file);
    for (const options of [undefined, { linkPrefixes: [] }, { linkPrefixes: [join(elsewhere, 'sub')] }]) {
      const error = configErrorOf(() => loadConfigSync(home, options));
      expect(error.kind).toBe('read');
      expect((error.cause as { code?: string }).code).toBe('ESYMLINK');
      expect(error.message).not.toContain('LINKED-CONTENT');
    }
    expect(configErrorOf(() => loadConfigSync(home)).message).toBe(
      `${file}: cannot read: refusing to read ${file}: it is a symbolic link that does not lead into /nix/store [ESYMLINK at verify: ${file}]`,
    );
  });

  test('a config.yaml with a second name is reported, not read', async () => {
    const home = await tempHome();
    const file = join(home, 'config.yaml');
    await writeFile(file, 'model: x\n');
    await link(file, join(home, 'other-name'));
    const error = configErrorOf(() => loadConfigSync(home));
    expect((error.cause as { code?: string }).code).toBe('EHARDLINK');
  });

  test('a file that is not UTF-8 is reported, not decoded with replacement characters', async () => {
    const home = await tempHome();
    const file = join(home, 'config.yaml');
    await writeFile(file, Buffer.from([0x61, 0x3a, 0x20, 0xff, 0xfe, 0x0a]));
    const error = await configErrorOfAsync(loadConfig(home));
    expect(error.kind).toBe('read');
    expect(error.expected).toBe('UTF-8 text');
    expect(error.message).toBe(`${file}: not valid UTF-8 text`);
    expect(configErrorOf(() => loadConfigSync(home)).message).toBe(error.message);
  });

  test('an empty home is refused', () => {
    expect(() => loadConfigSync('')).toThrow(new TypeError('@hermes/config: home must be a non-empty path'));
  });
});
