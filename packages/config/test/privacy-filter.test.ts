import { describe, expect, test } from 'vitest';
import { coercePrivacyFilter, parseConfig, type PrivacyFilter } from '../src/index.js';

/** [YAML value as written after `privacy_filter: `, mode, warning (null = none)]. */
const TABLE: [string, PrivacyFilter, string | null][] = [
  // canonical: no warning
  ['true', 'full', null],
  ['false', 'off', null],
  ['', 'off', null],
  ['~', 'off', null],
  ['null', 'off', null],
  ['off', 'off', null],
  ['display', 'display', null],
  ['full', 'full', null],
  ['""', 'off', null],
  // the reference's string forms: trimmed and lower-cased
  ['Display', 'display', '"Display" was read as "display"'],
  ['FULL', 'full', '"FULL" was read as "full"'],
  ['" full "', 'full', '" full " was read as "full"'],
  ['OFF', 'off', '"OFF" was read as "off"'],
  ['"  "', 'off', '"  " was read as "off"'],
  // truthy words → full (PyYAML would read yes/on as true, which is full too)
  ['"true"', 'full', '"true" was read as "full"'],
  ['yes', 'full', '"yes" was read as "full"'],
  ['on', 'full', '"on" was read as "full"'],
  ['ON', 'full', '"ON" was read as "full"'],
  ['"1"', 'full', '"1" was read as "full"'],
  ['1', 'full', '1 was read as "full"'],
  // falsy words → off
  ['"false"', 'off', '"false" was read as "off"'],
  ['no', 'off', '"no" was read as "off"'],
  ['"0"', 'off', '"0" was read as "off"'],
  ['0', 'off', '0 was read as "off"'],
  // anything else → off, loudly
  ['partial', 'off', 'unknown value "partial" was read as "off", so privacy filtering is OFF (expected off, display or full)'],
  ['dispaly', 'off', 'unknown value "dispaly" was read as "off", so privacy filtering is OFF (expected off, display or full)'],
  ['redact', 'off', 'unknown value "redact" was read as "off", so privacy filtering is OFF (expected off, display or full)'],
  ['2', 'off', 'unknown value 2 was read as "off", so privacy filtering is OFF (expected off, display or full)'],
  ['-1', 'off', 'unknown value -1 was read as "off", so privacy filtering is OFF (expected off, display or full)'],
  ['0.5', 'off', 'unknown value 0.5 was read as "off", so privacy filtering is OFF (expected off, display or full)'],
];

describe('moa.privacy_filter coercion (python-consumers.md §4.5)', () => {
  test.each(TABLE)('privacy_filter: %s → %s', (written, mode, note) => {
    const loaded = parseConfig(`moa:\n  privacy_filter: ${written}\n`);
    expect(loaded.config.moa.privacyFilter).toBe(mode);
    expect(loaded.warnings).toStrictEqual(
      note === null ? [] : [`config.yaml: moa.privacy_filter: ${note} (line 2, column 19)`],
    );
  });

  test('a missing key and a missing section are off, without a warning', () => {
    for (const text of ['moa:\n  save_traces: true\n', 'agent: {}\n']) {
      const loaded = parseConfig(text);
      expect(loaded.config.moa.privacyFilter).toBe('off');
      expect(loaded.warnings).toStrictEqual([]);
    }
  });

  test('raw keeps the value as written, not the coerced mode', () => {
    expect(parseConfig('moa:\n  privacy_filter: yes\n').raw).toStrictEqual({ moa: { privacy_filter: 'yes' } });
  });
});

describe('coercePrivacyFilter()', () => {
  test.each([
    [true, 'full', null],
    [false, 'off', null],
    [null, 'off', null],
    [undefined, 'off', null],
    ['display', 'display', null],
    ['full', 'full', null],
    ['off', 'off', null],
    ['', 'off', null],
    [' Display\n', 'display', '" Display\\n" was read as "display"'],
    ['on', 'full', '"on" was read as "full"'],
    [1, 'full', '1 was read as "full"'],
    [0, 'off', '0 was read as "off"'],
    ['nope', 'off', 'unknown value "nope" was read as "off", so privacy filtering is OFF (expected off, display or full)'],
  ] as const)('%j → %s', (value, mode, note) => {
    expect(coercePrivacyFilter(value)).toStrictEqual({ mode, note });
  });
});
