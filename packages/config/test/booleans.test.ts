import { describe, expect, test } from 'vitest';
import { parseConfig } from '../src/index.js';

/** [YAML value as written, result, warning note (null = none)]. */
const TABLE: [string, boolean, string | null][] = [
  ['true', true, null],
  ['false', false, null],
  ['True', true, null],
  ['FALSE', false, null],
  ['', false, null],
  ['~', false, null],
  ['yes', true, 'the string "yes" was read as true; write true or false'],
  ['no', false, 'the string "no" was read as false; write true or false'],
  ['on', true, 'the string "on" was read as true; write true or false'],
  ['off', false, 'the string "off" was read as false; write true or false'],
  ['Yes', true, 'the string "Yes" was read as true; write true or false'],
  ['"true"', true, 'the string "true" was read as true; write true or false'],
  ['"false"', false, 'the string "false" was read as false; write true or false'],
  ['" on "', true, 'the string " on " was read as true; write true or false'],
  ['"1"', true, 'the string "1" was read as true; write true or false'],
  ['"0"', false, 'the string "0" was read as false; write true or false'],
  ['1', true, '1 was read as true; write true or false'],
  ['0', false, '0 was read as false; write true or false'],
];

describe('moa.save_traces', () => {
  test.each(TABLE)('save_traces: %s → %s', (written, value, note) => {
    const loaded = parseConfig(`moa:\n  save_traces: ${written}\n`);
    expect(loaded.config.moa.saveTraces).toBe(value);
    expect(loaded.warnings).toStrictEqual(
      note === null ? [] : [`config.yaml: moa.save_traces: ${note} (line 2, column 16)`],
    );
  });
});

describe('agent.trajectory_allow_git_cwd', () => {
  test.each(TABLE)('trajectory_allow_git_cwd: %s → %s', (written, value, note) => {
    const loaded = parseConfig(`agent:\n  trajectory_allow_git_cwd: ${written}\n`, 'home/config.yaml');
    expect(loaded.config.agent.trajectoryAllowGitCwd).toBe(value);
    expect(loaded.warnings).toStrictEqual(
      note === null ? [] : [`home/config.yaml: agent.trajectory_allow_git_cwd: ${note} (line 2, column 29)`],
    );
  });
});

describe('numbers', () => {
  test('valid limits are taken as written', () => {
    const loaded = parseConfig(
      [
        'gateway:',
        '  pending:',
        '    max_files: 1',
        '    max_bytes: 0x100000',
        '    bad_retention_days: 0',
        '    snapshot_retention_days: 0.25',
        '  shutdown_flush_budget_ms: 1e4',
        '',
      ].join('\n'),
    );
    expect(loaded.config.gateway).toStrictEqual({
      pending: { maxFiles: 1, maxBytes: 1048576, badRetentionDays: 0, snapshotRetentionDays: 0.25 },
      shutdownFlushBudgetMs: 10000,
    });
    expect(loaded.warnings).toStrictEqual([]);
  });

  test('the largest safe integer is accepted', () => {
    expect(parseConfig('gateway:\n  pending:\n    max_bytes: 9007199254740991\n').config.gateway.pending.maxBytes).toBe(
      9007199254740991,
    );
  });
});
