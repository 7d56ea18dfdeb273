import { describe, expect, test } from 'vitest';
import { parseConfig } from '../src/index.js';
import { configErrorOf } from './helpers.js';

describe('text that is not valid YAML', () => {
  test.each([
    [
      'a nested mapping on one line',
      'moa:\n  save_traces: true\n  trace_dir: a: b\n',
      3,
      14,
      'config.yaml: invalid YAML: Nested mappings are not allowed in compact mappings (line 3, column 14)',
    ],
    [
      'a tab used as indentation',
      'moa:\n  save_traces: true\nagent:\n\ttrajectory_allow_git_cwd: true\n',
      4,
      1,
      'config.yaml: invalid YAML: Tabs are not allowed as indentation (line 4, column 1)',
    ],
    [
      'a duplicate key',
      'moa:\n  save_traces: true\n  save_traces: false\n',
      3,
      3,
      'config.yaml: invalid YAML: Map keys must be unique (line 3, column 3)',
    ],
    [
      'two documents',
      'moa: {}\n---\nagent: {}\n',
      2,
      1,
      'config.yaml: invalid YAML: Source contains multiple documents; please use YAML.parseAllDocuments() (line 2, column 1)',
    ],
  ])('%s → a syntax ConfigError naming the line', (_case, text, line, column, message) => {
    const error = configErrorOf(() => parseConfig(text));
    expect(error.kind).toBe('syntax');
    expect(error.keyPath).toBe('');
    expect(error.expected).toBe('valid YAML');
    expect(error.value).toBeUndefined();
    expect(error.file).toBe('config.yaml');
    expect(error.line).toBe(line);
    expect(error.column).toBe(column);
    expect(error.message).toBe(message);
  });

  test('the file name given to parseConfig leads the message', () => {
    const error = configErrorOf(() => parseConfig('a: 1\nb: "open\n', '/srv/hermes/config.yaml'));
    expect(error.message).toBe('/srv/hermes/config.yaml: invalid YAML: Missing closing "quote (line 3, column 1)');
    expect(error.line).toBe(3);
  });

  test('a BOM does not shift line numbers', () => {
    const error = configErrorOf(() => parseConfig('\uFEFFmoa:\n  x: a: b\n'));
    expect(error.line).toBe(2);
    expect(error.column).toBe(6);
  });

  test('an alias expansion bomb is refused as a syntax error', () => {
    const text = [
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]',
      'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]',
      'd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]',
      '',
    ].join('\n');
    const error = configErrorOf(() => parseConfig(text));
    expect(error.kind).toBe('syntax');
    expect(error.message).toBe('config.yaml: invalid YAML: Excessive alias count indicates a resource exhaustion attack');
  });
});

describe('a top level that is not a mapping', () => {
  test.each([
    ['a list', '- moa\n- agent\n', ['moa', 'agent'], 'config.yaml: the top level must be a mapping, got a list ["moa","agent"] (line 1, column 1)'],
    ['a flow list', '[]\n', [], 'config.yaml: the top level must be a mapping, got a list [] (line 1, column 1)'],
    ['a string', 'save_traces\n', 'save_traces', 'config.yaml: the top level must be a mapping, got "save_traces" (line 1, column 1)'],
    ['a number', '42\n', 42, 'config.yaml: the top level must be a mapping, got 42 (line 1, column 1)'],
    ['a boolean after a comment', '# config\ntrue\n', true, 'config.yaml: the top level must be a mapping, got true (line 2, column 1)'],
  ])('%s → a not-mapping ConfigError', (_case, text, value, message) => {
    const error = configErrorOf(() => parseConfig(text));
    expect(error.kind).toBe('not-mapping');
    expect(error.keyPath).toBe('');
    expect(error.value).toStrictEqual(value);
    expect(error.expected).toBe('a mapping at the top level');
    expect(error.message).toBe(message);
    expect(error.issues).toHaveLength(1);
  });
});

describe('YAML-level warnings', () => {
  test('an unresolved tag is a warning, and the value is kept as a string', () => {
    const loaded = parseConfig('moa:\n  trace_dir: !path /var/moa\n');
    expect(loaded.config.moa.traceDir).toBe('/var/moa');
    expect(loaded.warnings).toStrictEqual(['config.yaml: YAML: Unresolved tag: !path (line 2, column 14)']);
  });

  test('<< merge keys are honoured, as PyYAML does', () => {
    const loaded = parseConfig('defaults: &d {save_traces: true, privacy_filter: full}\nmoa:\n  <<: *d\n  privacy_filter: display\n');
    expect(loaded.config.moa).toStrictEqual({ saveTraces: true, traceDir: null, privacyFilter: 'display' });
    expect(loaded.raw).toStrictEqual({
      defaults: { save_traces: true, privacy_filter: 'full' },
      moa: { save_traces: true, privacy_filter: 'display' },
    });
  });
});
