import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { loadConfig, parseConfig, toYaml } from '../src/index.js';
import { tempHome } from './helpers.js';

const SOURCE = [
  '# a hand-written config with keys this package does not know',
  'model: anthropic/claude-sonnet',
  'toolsets: [web, terminal]',
  'moa:',
  '  save_traces: yes',
  '  privacy_filter: display',
  '  presets:',
  '    default:',
  '      references: [gpt, gemini]',
  '      aggregator: {model: opus, temperature: 0.4}',
  '  cache_ttl: 3600',
  '  note: "007"',
  '  empty:',
  'agent:',
  '  max_turns: 90',
  '  trajectory_allow_git_cwd: false',
  'gateway:',
  '  pending:',
  '    max_files: 20',
  '    future_knob: .inf',
  '  platforms:',
  '    telegram: {enabled: true, token_env: TG_TOKEN}',
  'odd values:',
  '  version: "1.10"',
  '  octal-looking: "0701"',
  '  bool-looking: "true"',
  '  multi: |',
  '    line one',
  '    line two',
  '  nan: .nan',
  '  negative zero: -0.0',
  '  unicode: "héllo ✓"',
  '',
].join('\n');

const RAW = {
  model: 'anthropic/claude-sonnet',
  toolsets: ['web', 'terminal'],
  moa: {
    save_traces: 'yes',
    privacy_filter: 'display',
    presets: { default: { references: ['gpt', 'gemini'], aggregator: { model: 'opus', temperature: 0.4 } } },
    cache_ttl: 3600,
    note: '007',
    empty: null,
  },
  agent: { max_turns: 90, trajectory_allow_git_cwd: false },
  gateway: {
    pending: { max_files: 20, future_knob: Infinity },
    platforms: { telegram: { enabled: true, token_env: 'TG_TOKEN' } },
  },
  'odd values': {
    version: '1.10',
    'octal-looking': '0701',
    'bool-looking': 'true',
    multi: 'line one\nline two\n',
    nan: NaN,
    'negative zero': -0,
    unicode: 'héllo ✓',
  },
};

describe('unknown keys survive parse → toYaml → parse', () => {
  test('raw holds the whole document as written, unknown keys included', () => {
    const first = parseConfig(SOURCE);
    expect(first.raw).toStrictEqual(RAW);
    expect(first.config.moa.saveTraces).toBe(true);
    expect(first.config.gateway.pending.maxFiles).toBe(20);
  });

  test('the round trip keeps every key and value, top-level and nested inside moa:', () => {
    const first = parseConfig(SOURCE);
    const text = toYaml(first.raw);
    const second = parseConfig(text);
    expect(second.raw).toStrictEqual(RAW);
    expect(second.config).toStrictEqual(first.config);
    expect(first.warnings).toStrictEqual([
      'config.yaml: moa.save_traces: the string "yes" was read as true; write true or false (line 5, column 16)',
    ]);
    // the same coercion is reported again; toYaml lays keys out one per line, so the line moves
    expect(second.warnings).toStrictEqual([
      'config.yaml: moa.save_traces: the string "yes" was read as true; write true or false (line 6, column 16)',
    ]);
    // and a second lap is a fixed point
    expect(toYaml(second.raw)).toBe(text);
  });

  test('an edited raw round-trips through a real file', async () => {
    const first = parseConfig(SOURCE);
    const edited = { ...first.raw, moa: { ...(first.raw.moa as Record<string, unknown>), save_traces: true, trace_dir: '/srv/moa' } };
    const home = await tempHome();
    await writeFile(join(home, 'config.yaml'), toYaml(edited));
    const loaded = await loadConfig(home);
    expect(loaded.config.moa).toStrictEqual({ saveTraces: true, traceDir: '/srv/moa', privacyFilter: 'display' });
    expect(loaded.warnings).toStrictEqual([]);
    expect(loaded.raw.model).toBe('anthropic/claude-sonnet');
    expect((loaded.raw.moa as Record<string, unknown>).presets).toStrictEqual({
      default: { references: ['gpt', 'gemini'], aggregator: { model: 'opus', temperature: 0.4 } },
    });
    expect((loaded.raw.moa as Record<string, unknown>).cache_ttl).toBe(3600);
  });

  test('a __proto__ key is kept as an own key and pollutes nothing', () => {
    const loaded = parseConfig('__proto__: {polluted: 1}\nmoa:\n  __proto__: {save_traces: true}\n');
    expect(Object.hasOwn(loaded.raw, '__proto__')).toBe(true);
    expect(loaded.config.moa.saveTraces).toBe(false);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const again = parseConfig(toYaml(loaded.raw));
    expect(Object.hasOwn(again.raw, '__proto__')).toBe(true);
    expect(JSON.stringify(again.raw)).toBe('{"__proto__":{"polluted":1},"moa":{"__proto__":{"save_traces":true}}}');
  });

  test('parsing never mutates raw, and raw is not shared with config', () => {
    const loaded = parseConfig('moa:\n  save_traces: true\n  trace_dir: /x\n');
    expect(loaded.raw).toStrictEqual({ moa: { save_traces: true, trace_dir: '/x' } });
    expect(Object.keys(loaded.config.moa)).toStrictEqual(['saveTraces', 'traceDir', 'privacyFilter']);
  });
});
