/**
 * What a tracer keeps from one turn to the next: only invariants (its append options, the file name of the
 * session it last wrote). Every turn still reaches its directory afresh, so a change between turns is seen.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempRoot } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { createMoaTracer, type MoaTurn } from '../src/index.js';

function turn(sessionId: string | null, n: number): MoaTurn {
  return {
    sessionId,
    preset: 'default',
    references: [{ label: 'a', model: 'm-a', provider: 'p', inputMessages: [{ role: 'user', content: `q${String(n)}` }], output: `r${String(n)}` }],
    aggregator: { label: 'agg', model: 'm-g', provider: 'p', inputMessages: [{ role: 'user', content: `q${String(n)}` }], output: `o${String(n)}`, streamed: false },
  };
}

function outputs(file: string): string[] {
  return fs
    .readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { aggregator: { output: string } }).aggregator.output);
}

describe('a tracer across turns', () => {
  it('alternating sessions each write their own file, turn after turn', () => {
    const home = path.join(tempRoot(), 'home');
    const tracer = createMoaTracer({ home, saveTraces: true });
    const ids = ['s-a', 's-b', 's-a', 'x/y', null, 's-b', 'x/y', 's-a'];
    ids.forEach((id, n) => {
      expect(tracer.recordSync(turn(id, n)).written).toBe(true);
    });
    const dir = path.join(home, 'moa-traces');
    const files = fs.readdirSync(dir).sort();
    console.log(`sessions: ${String(ids.length)} turns into ${String(files.length)} files: ${files.join(', ')}`);
    expect(files).toEqual(['s-a.jsonl', 's-b.jsonl', 'unknown-session.jsonl', 'x_y-bd3c9047d681.jsonl']);
    expect(outputs(path.join(dir, 's-a.jsonl'))).toEqual(['o0', 'o2', 'o7']);
    expect(outputs(path.join(dir, 's-b.jsonl'))).toEqual(['o1', 'o5']);
    expect(outputs(path.join(dir, 'x_y-bd3c9047d681.jsonl'))).toEqual(['o3', 'o6']);
    expect(outputs(path.join(dir, 'unknown-session.jsonl'))).toEqual(['o4']);
    expect(tracer.stats()).toEqual({ written: 8, failed: 0, lastError: null });
  });

  it('a trace dir swapped for a link out of the home after two turns is refused on the third', () => {
    const root = tempRoot();
    const home = path.join(root, 'home');
    const outside = path.join(root, 'outside');
    fs.mkdirSync(outside);
    const tracer = createMoaTracer({ home, saveTraces: true });
    expect(tracer.recordSync(turn('s', 0)).written).toBe(true);
    expect(tracer.recordSync(turn('s', 1)).written).toBe(true);
    fs.renameSync(path.join(home, 'moa-traces'), path.join(root, 'moved'));
    fs.symlinkSync(outside, path.join(home, 'moa-traces'));
    const third = tracer.recordSync(turn('s', 2));
    console.log(`swap after 2 turns: third written=${String(third.written)} code=${String((third.error as { code?: string } | undefined)?.code)}`);
    expect(third).toMatchObject({ written: false, error: { code: 'ESYMLINK_ESCAPE', path: path.join(home, 'moa-traces') } });
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(outputs(path.join(root, 'moved', 's.jsonl'))).toEqual(['o0', 'o1']);
  });
});
