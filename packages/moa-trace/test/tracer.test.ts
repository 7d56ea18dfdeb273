import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseConfig } from '@hermes/config';
import { FsPolicyError, loadEnvironment, type FsPolicyLogger, type LogFields } from '@hermes/fs-policy';
import { tempRoot } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import {
  createMoaTracer,
  expandVars,
  moaTraceSettingsFromConfig,
  MoaTraceConfigError,
  resolveTraceDir,
  type MoaAggregatorSlot,
  type MoaTurn,
} from '../src/index.js';

function turnWith(aggregator: Partial<MoaAggregatorSlot>, sessionId = 'sess-xyz'): MoaTurn {
  return {
    sessionId,
    preset: 'default',
    references: [
      {
        label: 'a',
        model: 'm-a',
        provider: 'p-a',
        inputMessages: [{ role: 'system', content: 'advise' }, { role: 'user', content: 'q' }],
        output: 'ref text',
      },
    ],
    aggregator: { label: 'agg', model: 'm-g', provider: 'p-g', inputMessages: [{ role: 'user', content: 'q' }], streamed: false, ...aggregator },
  };
}

function capture(): { logger: FsPolicyLogger; errors: { message: string; fields: LogFields | undefined }[] } {
  const errors: { message: string; fields: LogFields | undefined }[] = [];
  const noop = (): void => undefined;
  return { errors, logger: { debug: noop, info: noop, warn: noop, error: (message, fields) => errors.push({ message, fields }) } };
}

function lastRecord(file: string): Record<string, unknown> {
  const lines = fs.readFileSync(file, 'utf8').trim().split('\n');
  return JSON.parse(lines[lines.length - 1] ?? '') as Record<string, unknown>;
}

describe('record shape', () => {
  it('writes the reference record with all fields, defaults filled', async () => {
    const home = path.join(tempRoot(), 'home');
    const tracer = createMoaTracer({ home, saveTraces: true, clock: () => 1_700_000_000_500 });
    const r = await tracer.record(turnWith({ output: 'final', temperature: 0.2 }));
    expect(r).toMatchObject({ written: true, path: path.join(home, 'moa-traces', 'sess-xyz.jsonl'), created: true, mode: 0o600 });
    expect(fs.readFileSync(r.path ?? '', 'utf8')).toBe(
      '{"ts":1700000000.5,"session_id":"sess-xyz","preset":"default","references":[{"label":"a","model":"m-a","provider":"p-a",' +
        '"temperature":null,"input_messages":[{"role":"system","content":"advise"},{"role":"user","content":"q"}],"output":"ref text",' +
        '"usage":{},"cost_usd":null,"cost_status":null,"cost_source":null}],' +
        '"aggregator":{"label":"agg","model":"m-g","provider":"p-g","temperature":0.2,"input_messages":[{"role":"user","content":"q"}],' +
        '"output":"final","streamed":false,"output_location":"inline"}}\n',
    );
  });

  it('output_location: inline, inline_from_stream, assistant_message_in_session_db', () => {
    const home = path.join(tempRoot(), 'home');
    const tracer = createMoaTracer({ home, saveTraces: true });
    const file = path.join(home, 'moa-traces', 'sess-xyz.jsonl');
    const agg = (t: Partial<MoaAggregatorSlot>) => {
      tracer.recordSync(turnWith(t));
      return (lastRecord(file).aggregator as Record<string, unknown>);
    };
    expect(agg({ streamed: false, output: 'x' })).toMatchObject({ output: 'x', streamed: false, output_location: 'inline' });
    expect(agg({ streamed: false, output: null })).toMatchObject({ output: null, output_location: 'inline' });
    expect(agg({ streamed: true, output: 'streamed text' })).toMatchObject({ output: 'streamed text', streamed: true, output_location: 'inline_from_stream' });
    expect(agg({ streamed: true, output: '' })).toMatchObject({ output: null, output_location: 'assistant_message_in_session_db' });
    expect(agg({ streamed: true })).toMatchObject({ output: null, output_location: 'assistant_message_in_session_db' });
  });
});

describe('enable gate and directory', () => {
  it('disabled by default: record() writes nothing and returns written: false', async () => {
    const home = path.join(tempRoot(), 'home');
    const tracer = createMoaTracer({ home });
    expect(tracer.enabled).toBe(false);
    expect(tracer.traceDir).toBe(null);
    expect(tracer.pathFor('s')).toBe(null);
    const r = await tracer.record(turnWith({}));
    expect(r.written).toBe(false);
    expect(r.path).toBeUndefined();
    expect(r.error).toBeUndefined();
    expect(fs.existsSync(home)).toBe(false);
    expect(tracer.stats()).toEqual({ written: 0, failed: 0, lastError: null });
  });

  it('a disabled tracer ignores an unusable trace_dir', () => {
    expect(() => createMoaTracer({ home: '/tmp/h', traceDir: '$SURELY_NOT_SET_1234/x', vars: {} })).not.toThrow();
  });

  it('trace_dir expansion: ~, $VAR, ${VAR}, relative under the home, blank → default', () => {
    const vars = { HOME: '/home/u', AUDIT: '/srv/audit', SUB: 'moa' };
    expect(resolveTraceDir(null, '/h', vars)).toBe('/h/moa-traces');
    expect(resolveTraceDir('  ', '/h', vars)).toBe('/h/moa-traces');
    expect(resolveTraceDir('~/audit/moa', '/h', vars)).toBe('/home/u/audit/moa');
    expect(resolveTraceDir('$AUDIT/${SUB}', '/h', vars)).toBe('/srv/audit/moa');
    expect(resolveTraceDir('traces/$SUB', '/h', vars)).toBe('/h/traces/moa');
    expect(resolveTraceDir('/abs/../x/./moa', '/h', vars)).toBe('/x/moa');
    expect(expandVars('cost$5 and $', vars)).toBe('cost$5 and $');
  });

  it('an unset or empty variable, or a malformed ${…}, is a configuration error at creation', () => {
    const make = (traceDir: string) => () => createMoaTracer({ home: '/h', saveTraces: true, traceDir, vars: { EMPTY: '' } });
    expect(make('$NOPE/moa')).toThrow(MoaTraceConfigError);
    expect(make('$NOPE/moa')).toThrow(
      'moa trace_dir "$NOPE/moa": environment variable NOPE is not set (or empty); set it, or write the directory out',
    );
    expect(make('${EMPTY}/moa')).toThrow(expect.objectContaining({ code: 'EUNSET_VAR' }) as Error);
    expect(make('${A:-b}/moa')).toThrow(expect.objectContaining({ code: 'EBAD_VAR' }) as Error);
    expect(make('${OPEN/moa')).toThrow(expect.objectContaining({ code: 'EBAD_VAR' }) as Error);
  });

  it('invalid options are refused', () => {
    expect(() => createMoaTracer({ home: '' })).toThrow(MoaTraceConfigError);
    expect(() => createMoaTracer({ home: '/h', privacyFilter: 'yes' as never })).toThrow(
      'moa-trace: privacyFilter must be one of off, display, full (got "yes")',
    );
    expect(() => createMoaTracer({ home: '/h', saveTraces: 'true' as never })).toThrow(MoaTraceConfigError);
  });

  it('moaTraceSettingsFromConfig maps config.moa', () => {
    expect(
      moaTraceSettingsFromConfig({ moa: { saveTraces: true, traceDir: '~/audit', privacyFilter: 'display' } }),
    ).toEqual({ saveTraces: true, traceDir: '~/audit', privacyFilter: 'display' });
  });

  it('takes what @hermes/config loads, without depending on it (a structural type)', () => {
    // @hermes/config is only a dev dependency: this call typechecks only while its HermesConfig stays
    // assignable to MoaConfigSource, and shows the coerced values arriving unchanged.
    const { config } = parseConfig('moa:\n  save_traces: "yes"\n  trace_dir: ~/audit\n  privacy_filter: full\n', 'config.yaml');
    expect(moaTraceSettingsFromConfig(config)).toEqual({ saveTraces: true, traceDir: '~/audit', privacyFilter: 'full' });
  });
});

describe('failures are returned and logged, never thrown or hidden', () => {
  it('an unwritable trace dir: written false, FsPolicyError with path and hint, one error line, counted', async () => {
    const root = tempRoot();
    const home = path.join(root, 'home');
    fs.mkdirSync(home);
    fs.writeFileSync(path.join(home, 'blocker'), '');
    const { logger, errors } = capture();
    const tracer = createMoaTracer({ home, saveTraces: true, traceDir: 'blocker/moa', logger });
    const r = await tracer.record(turnWith({ output: 'x' }, 's'));
    expect(r.written).toBe(false);
    expect(r.path).toBe(path.join(home, 'blocker', 'moa', 's.jsonl'));
    expect(r.error).toBeInstanceOf(FsPolicyError);
    const error = r.error as FsPolicyError;
    // fs-policy names the level or the file it failed on (its open-first fast path fails at `open`).
    expect(error.code).toBe('ENOTDIR');
    expect(error.path.startsWith(path.join(home, 'blocker'))).toBe(true);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toBe(`MoA trace for session "s" not written: ${error.toLine()}`);
    expect(errors[0]?.fields).toEqual({
      path: error.path,
      code: 'ENOTDIR',
      errno: error.errno,
      step: error.step,
      uid: error.uid,
      hint: error.hint,
    });
    expect(error.hint).not.toBe('');
    const sync = tracer.recordSync(turnWith({ output: 'x' }, 's'));
    expect(sync.written).toBe(false);
    expect(tracer.stats()).toMatchObject({ written: 0, failed: 2 });
    expect(tracer.stats().lastError).toBe(sync.error);
  });

  it('a trace dir swapped for a link leading out of the home is refused, also when the file exists', () => {
    const root = tempRoot();
    const home = path.join(root, 'home');
    const outside = path.join(root, 'outside');
    fs.mkdirSync(home);
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 's.jsonl'), '');
    fs.symlinkSync(outside, path.join(home, 'moa-traces'));
    const { logger, errors } = capture();
    const tracer = createMoaTracer({ home, saveTraces: true, logger });
    for (const id of ['s', 'new-session']) {
      const r = tracer.recordSync(turnWith({}, id));
      expect(r).toMatchObject({ written: false, error: { code: 'ESYMLINK_ESCAPE', path: path.join(home, 'moa-traces') } });
    }
    expect(errors).toHaveLength(2);
    expect(fs.readFileSync(path.join(outside, 's.jsonl'), 'utf8')).toBe('');
    expect(fs.readdirSync(outside)).toEqual(['s.jsonl']);
  });

  it('a value JSON cannot hold: written false with ESERIALIZE, nothing appended', async () => {
    const home = path.join(tempRoot(), 'home');
    const { logger, errors } = capture();
    const tracer = createMoaTracer({ home, saveTraces: true, logger });
    const r = await tracer.record(turnWith({ inputMessages: [{ role: 'user', content: 1n }] }));
    expect(r).toMatchObject({ written: false, error: { code: 'ESERIALIZE' } });
    expect(errors).toHaveLength(1);
    expect(fs.existsSync(path.join(home, 'moa-traces', 'sess-xyz.jsonl'))).toBe(false);
  });

  it('an env loaded for another home is reported as a failure', () => {
    const root = tempRoot();
    const { logger, errors } = capture();
    const env = loadEnvironment({ home: path.join(root, 'other') });
    const tracer = createMoaTracer({ home: path.join(root, 'home'), saveTraces: true, env, logger });
    const r = tracer.recordSync(turnWith({}));
    expect(r.written).toBe(false);
    expect(r.error?.message).toBe(`moa-trace: options.env was loaded for ${path.join(root, 'other')}, not for the home ${path.join(root, 'home')}`);
    expect(errors).toHaveLength(1);
  });
});
