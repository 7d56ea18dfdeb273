import { describe, expect, test } from 'vitest';
import { ConfigError, parseConfig } from '../src/index.js';
import { configErrorOf } from './helpers.js';

/** [case, yaml text, key path, parsed value, expected text, line, column, full message]. */
type Row = [string, string, string, unknown, string, number, number, string];

const moa = (key: string, value: string) => `moa:\n  ${key}: ${value}\n`;
const agent = (value: string) => `agent:\n  trajectory_allow_git_cwd: ${value}\n`;
const pending = (key: string, value: string) => `gateway:\n  pending:\n    ${key}: ${value}\n`;
const budget = (value: string) => `gateway:\n  shutdown_flush_budget_ms: ${value}\n`;

const ROWS: Row[] = [
  // moa.save_traces — a boolean
  ['unknown word', moa('save_traces', 'maybe'), 'moa.save_traces', 'maybe', 'a boolean', 2, 16,
    'config.yaml: moa.save_traces: expected a boolean, got "maybe" (line 2, column 16)'],
  ['empty string', moa('save_traces', '""'), 'moa.save_traces', '', 'a boolean', 2, 16,
    'config.yaml: moa.save_traces: expected a boolean, got "" (line 2, column 16)'],
  ['number other than 0/1', moa('save_traces', '2'), 'moa.save_traces', 2, 'a boolean', 2, 16,
    'config.yaml: moa.save_traces: expected a boolean, got 2 (line 2, column 16)'],
  ['list', moa('save_traces', '[true]'), 'moa.save_traces', [true], 'a boolean', 2, 16,
    'config.yaml: moa.save_traces: expected a boolean, got a list [true] (line 2, column 16)'],
  ['mapping', moa('save_traces', '{on: 1}'), 'moa.save_traces', { on: 1 }, 'a boolean', 2, 16,
    'config.yaml: moa.save_traces: expected a boolean, got a mapping {"on":1} (line 2, column 16)'],

  // moa.trace_dir — a non-empty string
  ['empty string', moa('trace_dir', '""'), 'moa.trace_dir', '', 'a non-empty path string', 2, 14,
    'config.yaml: moa.trace_dir: expected a non-empty path string, got "" (line 2, column 14)'],
  ['blank string', moa('trace_dir', '"   "'), 'moa.trace_dir', '   ', 'a non-empty path string', 2, 14,
    'config.yaml: moa.trace_dir: expected a non-empty path string, got "   " (line 2, column 14)'],
  ['NUL byte', moa('trace_dir', '"a\\0b"'), 'moa.trace_dir', 'a\0b', 'a non-empty path string', 2, 14,
    'config.yaml: moa.trace_dir: expected a non-empty path string, got "a\\u0000b" (line 2, column 14)'],
  ['number', moa('trace_dir', '42'), 'moa.trace_dir', 42, 'a non-empty path string', 2, 14,
    'config.yaml: moa.trace_dir: expected a non-empty path string, got 42 (line 2, column 14)'],
  ['boolean', moa('trace_dir', 'true'), 'moa.trace_dir', true, 'a non-empty path string', 2, 14,
    'config.yaml: moa.trace_dir: expected a non-empty path string, got true (line 2, column 14)'],
  ['list', moa('trace_dir', '[/a, /b]'), 'moa.trace_dir', ['/a', '/b'], 'a non-empty path string', 2, 14,
    'config.yaml: moa.trace_dir: expected a non-empty path string, got a list ["/a","/b"] (line 2, column 14)'],

  // moa.privacy_filter — scalars are coerced (see privacy-filter.test.ts); collections are refused
  ['list', moa('privacy_filter', '[display]'), 'moa.privacy_filter', ['display'], 'off, display, full or a boolean', 2, 19,
    'config.yaml: moa.privacy_filter: expected off, display, full or a boolean, got a list ["display"] (line 2, column 19)'],
  ['mapping', moa('privacy_filter', '{mode: full}'), 'moa.privacy_filter', { mode: 'full' }, 'off, display, full or a boolean', 2, 19,
    'config.yaml: moa.privacy_filter: expected off, display, full or a boolean, got a mapping {"mode":"full"} (line 2, column 19)'],

  // agent.trajectory_allow_git_cwd — a boolean
  ['unknown word', agent('sometimes'), 'agent.trajectory_allow_git_cwd', 'sometimes', 'a boolean', 2, 29,
    'config.yaml: agent.trajectory_allow_git_cwd: expected a boolean, got "sometimes" (line 2, column 29)'],
  ['empty string', agent("''"), 'agent.trajectory_allow_git_cwd', '', 'a boolean', 2, 29,
    'config.yaml: agent.trajectory_allow_git_cwd: expected a boolean, got "" (line 2, column 29)'],
  ['negative number', agent('-1'), 'agent.trajectory_allow_git_cwd', -1, 'a boolean', 2, 29,
    'config.yaml: agent.trajectory_allow_git_cwd: expected a boolean, got -1 (line 2, column 29)'],
  ['list', agent('[]'), 'agent.trajectory_allow_git_cwd', [], 'a boolean', 2, 29,
    'config.yaml: agent.trajectory_allow_git_cwd: expected a boolean, got a list [] (line 2, column 29)'],

  // gateway.pending.max_files — a positive integer
  ['negative', pending('max_files', '-1'), 'gateway.pending.max_files', -1, 'a positive integer', 3, 16,
    'config.yaml: gateway.pending.max_files: expected a positive integer, got -1 (line 3, column 16)'],
  ['zero', pending('max_files', '0'), 'gateway.pending.max_files', 0, 'a positive integer', 3, 16,
    'config.yaml: gateway.pending.max_files: expected a positive integer, got 0 (line 3, column 16)'],
  ['non-integer', pending('max_files', '1.5'), 'gateway.pending.max_files', 1.5, 'a positive integer', 3, 16,
    'config.yaml: gateway.pending.max_files: expected a positive integer, got 1.5 (line 3, column 16)'],
  ['numeric string', pending('max_files', '"10"'), 'gateway.pending.max_files', '10', 'a positive integer', 3, 16,
    'config.yaml: gateway.pending.max_files: expected a positive integer, got "10" (line 3, column 16)'],
  ['underscore digits (a string in YAML 1.2)', pending('max_files', '10_000'), 'gateway.pending.max_files', '10_000', 'a positive integer', 3, 16,
    'config.yaml: gateway.pending.max_files: expected a positive integer, got "10_000" (line 3, column 16)'],
  ['boolean', pending('max_files', 'true'), 'gateway.pending.max_files', true, 'a positive integer', 3, 16,
    'config.yaml: gateway.pending.max_files: expected a positive integer, got true (line 3, column 16)'],
  ['infinity', pending('max_files', '.inf'), 'gateway.pending.max_files', Infinity, 'a positive integer', 3, 16,
    'config.yaml: gateway.pending.max_files: expected a positive integer, got .inf (line 3, column 16)'],
  ['beyond safe integers', pending('max_files', '9007199254740992'), 'gateway.pending.max_files', 9007199254740992, 'a positive integer', 3, 16,
    'config.yaml: gateway.pending.max_files: expected a positive integer, got 9007199254740992 (line 3, column 16)'],

  // gateway.pending.max_bytes — a positive integer
  ['negative', pending('max_bytes', '-268435456'), 'gateway.pending.max_bytes', -268435456, 'a positive integer', 3, 16,
    'config.yaml: gateway.pending.max_bytes: expected a positive integer, got -268435456 (line 3, column 16)'],
  ['zero', pending('max_bytes', '0'), 'gateway.pending.max_bytes', 0, 'a positive integer', 3, 16,
    'config.yaml: gateway.pending.max_bytes: expected a positive integer, got 0 (line 3, column 16)'],
  ['non-integer', pending('max_bytes', '1024.25'), 'gateway.pending.max_bytes', 1024.25, 'a positive integer', 3, 16,
    'config.yaml: gateway.pending.max_bytes: expected a positive integer, got 1024.25 (line 3, column 16)'],
  ['size with a unit', pending('max_bytes', '256MiB'), 'gateway.pending.max_bytes', '256MiB', 'a positive integer', 3, 16,
    'config.yaml: gateway.pending.max_bytes: expected a positive integer, got "256MiB" (line 3, column 16)'],
  ['null-like word', pending('max_bytes', 'none'), 'gateway.pending.max_bytes', 'none', 'a positive integer', 3, 16,
    'config.yaml: gateway.pending.max_bytes: expected a positive integer, got "none" (line 3, column 16)'],

  // gateway.pending.bad_retention_days — a finite non-negative number
  ['negative', pending('bad_retention_days', '-1'), 'gateway.pending.bad_retention_days', -1, 'a finite non-negative number', 3, 25,
    'config.yaml: gateway.pending.bad_retention_days: expected a finite non-negative number, got -1 (line 3, column 25)'],
  ['negative fraction', pending('bad_retention_days', '-0.5'), 'gateway.pending.bad_retention_days', -0.5, 'a finite non-negative number', 3, 25,
    'config.yaml: gateway.pending.bad_retention_days: expected a finite non-negative number, got -0.5 (line 3, column 25)'],
  ['string', pending('bad_retention_days', '30d'), 'gateway.pending.bad_retention_days', '30d', 'a finite non-negative number', 3, 25,
    'config.yaml: gateway.pending.bad_retention_days: expected a finite non-negative number, got "30d" (line 3, column 25)'],
  ['infinity', pending('bad_retention_days', '.inf'), 'gateway.pending.bad_retention_days', Infinity, 'a finite non-negative number', 3, 25,
    'config.yaml: gateway.pending.bad_retention_days: expected a finite non-negative number, got .inf (line 3, column 25)'],
  ['NaN', pending('bad_retention_days', '.nan'), 'gateway.pending.bad_retention_days', NaN, 'a finite non-negative number', 3, 25,
    'config.yaml: gateway.pending.bad_retention_days: expected a finite non-negative number, got .nan (line 3, column 25)'],
  ['boolean', pending('bad_retention_days', 'false'), 'gateway.pending.bad_retention_days', false, 'a finite non-negative number', 3, 25,
    'config.yaml: gateway.pending.bad_retention_days: expected a finite non-negative number, got false (line 3, column 25)'],

  // gateway.pending.snapshot_retention_days — a finite non-negative number
  ['negative', pending('snapshot_retention_days', '-30'), 'gateway.pending.snapshot_retention_days', -30, 'a finite non-negative number', 3, 30,
    'config.yaml: gateway.pending.snapshot_retention_days: expected a finite non-negative number, got -30 (line 3, column 30)'],
  ['negative infinity', pending('snapshot_retention_days', '-.inf'), 'gateway.pending.snapshot_retention_days', -Infinity, 'a finite non-negative number', 3, 30,
    'config.yaml: gateway.pending.snapshot_retention_days: expected a finite non-negative number, got -.inf (line 3, column 30)'],
  ['string', pending('snapshot_retention_days', '"30"'), 'gateway.pending.snapshot_retention_days', '30', 'a finite non-negative number', 3, 30,
    'config.yaml: gateway.pending.snapshot_retention_days: expected a finite non-negative number, got "30" (line 3, column 30)'],
  ['mapping', pending('snapshot_retention_days', '{days: 3}'), 'gateway.pending.snapshot_retention_days', { days: 3 }, 'a finite non-negative number', 3, 30,
    'config.yaml: gateway.pending.snapshot_retention_days: expected a finite non-negative number, got a mapping {"days":3} (line 3, column 30)'],

  // gateway.shutdown_flush_budget_ms — a positive integer
  ['zero', budget('0'), 'gateway.shutdown_flush_budget_ms', 0, 'a positive integer', 2, 29,
    'config.yaml: gateway.shutdown_flush_budget_ms: expected a positive integer, got 0 (line 2, column 29)'],
  ['negative', budget('-5'), 'gateway.shutdown_flush_budget_ms', -5, 'a positive integer', 2, 29,
    'config.yaml: gateway.shutdown_flush_budget_ms: expected a positive integer, got -5 (line 2, column 29)'],
  ['non-integer', budget('2.5'), 'gateway.shutdown_flush_budget_ms', 2.5, 'a positive integer', 2, 29,
    'config.yaml: gateway.shutdown_flush_budget_ms: expected a positive integer, got 2.5 (line 2, column 29)'],
  ['duration string', budget('5s'), 'gateway.shutdown_flush_budget_ms', '5s', 'a positive integer', 2, 29,
    'config.yaml: gateway.shutdown_flush_budget_ms: expected a positive integer, got "5s" (line 2, column 29)'],
  ['boolean', budget('false'), 'gateway.shutdown_flush_budget_ms', false, 'a positive integer', 2, 29,
    'config.yaml: gateway.shutdown_flush_budget_ms: expected a positive integer, got false (line 2, column 29)'],

  // sections — a mapping
  ['moa is a scalar', 'moa: true\n', 'moa', true, 'a mapping', 1, 6,
    'config.yaml: moa: expected a mapping, got true (line 1, column 6)'],
  ['agent is a list', 'agent:\n  - trajectory_allow_git_cwd\n', 'agent', ['trajectory_allow_git_cwd'], 'a mapping', 2, 3,
    'config.yaml: agent: expected a mapping, got a list ["trajectory_allow_git_cwd"] (line 2, column 3)'],
  ['gateway is a string', 'gateway: "on"\n', 'gateway', 'on', 'a mapping', 1, 10,
    'config.yaml: gateway: expected a mapping, got "on" (line 1, column 10)'],
  ['gateway.pending is a number', 'gateway:\n  pending: 100\n', 'gateway.pending', 100, 'a mapping', 2, 12,
    'config.yaml: gateway.pending: expected a mapping, got 100 (line 2, column 12)'],
];

describe('every invalid value fails with a ConfigError naming its key path', () => {
  test.each(ROWS)('%s: %j', (_case, text, keyPath, value, expected, line, column, message) => {
    const error = configErrorOf(() => parseConfig(text));
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.name).toBe('ConfigError');
    expect(error.kind).toBe('invalid-value');
    expect(error.file).toBe('config.yaml');
    expect(error.keyPath).toBe(keyPath);
    expect(error.value).toStrictEqual(value);
    expect(error.expected).toBe(expected);
    expect(error.line).toBe(line);
    expect(error.column).toBe(column);
    expect(error.message).toBe(message);
    expect(error.issues).toHaveLength(1);
  });

  test('every validated key has at least one row above', () => {
    const covered = new Set(ROWS.map((row) => row[2]));
    expect([...covered].sort()).toStrictEqual([
      'agent',
      'agent.trajectory_allow_git_cwd',
      'gateway',
      'gateway.pending',
      'gateway.pending.bad_retention_days',
      'gateway.pending.max_bytes',
      'gateway.pending.max_files',
      'gateway.pending.snapshot_retention_days',
      'gateway.shutdown_flush_budget_ms',
      'moa',
      'moa.privacy_filter',
      'moa.save_traces',
      'moa.trace_dir',
    ]);
  });
});

describe('all invalid keys are collected', () => {
  const TEXT = [
    'moa:',
    '  save_traces: maybe',
    '  trace_dir: ""',
    '  privacy_filter: display',
    'agent:',
    '  trajectory_allow_git_cwd: 2',
    'gateway:',
    '  pending:',
    '    max_files: -1',
    '    max_bytes: 1.5',
    '    bad_retention_days: -2',
    '    snapshot_retention_days: .nan',
    '  shutdown_flush_budget_ms: "5000"',
    '',
  ].join('\n');

  test('one ConfigError lists them all, in file order, and repeats the first at the top', () => {
    const error = configErrorOf(() => parseConfig(TEXT, '/etc/hermes/config.yaml'));
    expect(error.issues.map((issue) => [issue.keyPath, issue.line])).toStrictEqual([
      ['moa.save_traces', 2],
      ['moa.trace_dir', 3],
      ['agent.trajectory_allow_git_cwd', 6],
      ['gateway.pending.max_files', 9],
      ['gateway.pending.max_bytes', 10],
      ['gateway.pending.bad_retention_days', 11],
      ['gateway.pending.snapshot_retention_days', 12],
      ['gateway.shutdown_flush_budget_ms', 13],
    ]);
    expect(error.message).toBe(
      [
        '/etc/hermes/config.yaml: 8 problems:',
        '  moa.save_traces: expected a boolean, got "maybe" (line 2, column 16)',
        '  moa.trace_dir: expected a non-empty path string, got "" (line 3, column 14)',
        '  agent.trajectory_allow_git_cwd: expected a boolean, got 2 (line 6, column 29)',
        '  gateway.pending.max_files: expected a positive integer, got -1 (line 9, column 16)',
        '  gateway.pending.max_bytes: expected a positive integer, got 1.5 (line 10, column 16)',
        '  gateway.pending.bad_retention_days: expected a finite non-negative number, got -2 (line 11, column 25)',
        '  gateway.pending.snapshot_retention_days: expected a finite non-negative number, got .nan (line 12, column 30)',
        '  gateway.shutdown_flush_budget_ms: expected a positive integer, got "5000" (line 13, column 29)',
      ].join('\n'),
    );
    expect(error.keyPath).toBe('moa.save_traces');
    expect(error.value).toBe('maybe');
    expect(error.expected).toBe('a boolean');
    expect(error.line).toBe(2);
    expect(error.column).toBe(16);
    expect(error.file).toBe('/etc/hermes/config.yaml');
  });

  test('keys written in another order than the schema are still reported by line, then column', () => {
    const text = [
      'gateway:',
      '  shutdown_flush_budget_ms: 0',
      'agent: {trajectory_allow_git_cwd: 2}',
      'moa: {trace_dir: "", save_traces: maybe}',
      '',
    ].join('\n');
    const error = configErrorOf(() => parseConfig(text));
    const order = error.issues.map((issue) => [issue.keyPath, issue.line, issue.column]);
    console.log(`config issue order: ${JSON.stringify(order)}`);
    expect(order).toStrictEqual([
      ['gateway.shutdown_flush_budget_ms', 2, 29],
      ['agent.trajectory_allow_git_cwd', 3, 35],
      ['moa.trace_dir', 4, 18],
      ['moa.save_traces', 4, 35],
    ]);
    expect(error.keyPath).toBe('gateway.shutdown_flush_budget_ms');
    expect(error.line).toBe(2);
  });

  test('a value inherited through a << merge key is reported without a line', () => {
    const error = configErrorOf(() => parseConfig('base: &base {save_traces: maybe}\nmoa:\n  <<: *base\n'));
    expect(error.message).toBe('config.yaml: moa.save_traces: expected a boolean, got "maybe"');
    expect(error.line).toBeUndefined();
    expect('line' in error).toBe(false);
  });
});
