import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnNode, tempRoot } from '@hermes/test-utils';
import { describe, expect, it, onTestFinished } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/record-turns.mjs', import.meta.url));
const WRITERS = 4;
const TURNS = 500;
const TEXT = 24 * 1024; // each line ≈ 72 KiB: far above PIPE_BUF, so only one write(2) per line keeps it whole

function run(spec: object): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawnNode(fixture, [JSON.stringify(spec)], { env: {} });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      resolve({ code, stdout, stderr });
    });
  });
}

describe('concurrent appends to one session file', () => {
  it(`${WRITERS} processes × ${TURNS} turns with large texts: every line parses, none lost`, async () => {
    const root = tempRoot();
    onTestFinished(() => {
      fs.rmSync(root, { recursive: true, force: true }); // ≈ 140 MiB of trace text
    });
    const home = path.join(root, 'home');
    const runs = await Promise.all(
      Array.from({ length: WRITERS }, (_, writer) =>
        run({ home, sessionId: 'shared', turns: TURNS, textSize: TEXT, writer, sync: writer % 2 === 1 }),
      ),
    );
    for (const r of runs) expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });

    const text = fs.readFileSync(path.join(home, 'moa-traces', 'shared.jsonl'), 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    const lines = text.slice(0, -1).split('\n');
    expect(lines).toHaveLength(WRITERS * TURNS);
    const seen = new Map<number, Set<number>>();
    for (const line of lines) {
      const rec = JSON.parse(line) as { aggregator: { output: string }; references: { output: string }[] };
      const m = /^final (\d+):(\d+)$/.exec(rec.aggregator.output);
      expect(m).not.toBeNull();
      const writer = Number(m?.[1]);
      const seq = Number(m?.[2]);
      expect(rec.references[0]?.output).toBe(`answer ${seq} ${'x'.repeat(TEXT)}`);
      const set = seen.get(writer) ?? new Set<number>();
      set.add(seq);
      seen.set(writer, set);
    }
    expect([...seen.keys()].sort()).toEqual([0, 1, 2, 3]);
    for (const set of seen.values()) expect(set.size).toBe(TURNS);
  });
});
