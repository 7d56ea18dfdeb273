/**
 * Salvage of a batch file's temp (#24 row 4): a real atomic write of a batch, its writer SIGKILLed inside it.
 * Complete (killed before the rename): adopted under its batch name, then recovered member by member, once.
 * Incomplete (killed before its first byte): moved aside as `.partial`, never deleted.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseTempName } from '@hermes/fs-policy';
import { openSessionDb } from '@hermes/session-db';
import { spawnNode } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { recoverPending, salvageTemps } from '../src/index.js';
import { fixture, memoryLogger, names, spoolDir, tempDir } from './helpers.js';

/** Runs row4b-batch-temp.mjs until it blocks inside the batch's write at `step`, then SIGKILLs it. */
async function killedInside(step: 'rename' | 'write'): Promise<{ home: string; target: string; temp: string; members: string[] }> {
  const root = tempDir();
  const home = path.join(root, 'home');
  fs.mkdirSync(spoolDir(home), { recursive: true, mode: 0o700 });
  // Only the named temp can be left incomplete: with fs-policy's native layer the temp has no name (O_TMPFILE)
  // until it is complete and fsynced, so a writer killed at 'write' writes without it (HERMES_FS_ANCHOR=procfd).
  const env = { HERMES_HOME: home, ...(step === 'write' ? { HERMES_FS_ANCHOR: 'procfd' } : {}) };
  const child = spawnNode(fixture('row4b-batch-temp.mjs'), [step, path.join(root, 'scratch')], { umask: 0o022, env });
  const exited = new Promise<void>((resolve) => child.on('close', () => { resolve(); }));
  let err = '';
  child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /BLOCKED [^\n]+\n/.exec(out);
      if (m !== null) resolve(m[0].trim());
    });
    child.on('exit', () => { reject(new Error(`the child ended without blocking: ${out} ${err}`)); });
  });
  child.kill('SIGKILL');
  await exited;
  const [, target = '', list = ''] = line.split(' ');
  const temps = names(spoolDir(home)).filter((x) => parseTempName(x)?.target === path.basename(target));
  expect(temps).toHaveLength(1);
  return { home, target, temp: path.join(spoolDir(home), temps[0] ?? ''), members: list.split(',') };
}

describe('salvage of a batch file left under its temp name', () => {
  it('a complete batch temp is adopted under its batch name; recovery then inserts its three members once', async () => {
    const { home, target, temp } = await killedInside('rename');
    const bytes = fs.readFileSync(temp);
    const s = salvageTemps({ home, logger: memoryLogger() });
    console.log(`row4b salvage complete batch: scanned ${String(s.scanned)}, adopted ${String(s.adopted.length)}, partial ${String(s.partial.length)}, left ${s.left.map((l) => l.reason).join(',') || 0}`);
    expect(s.errors).toEqual([]);
    expect(s.left).toEqual([]);
    expect(s.adopted).toEqual([{ temp, path: target, bytes: bytes.length }]);
    expect(fs.readFileSync(target)).toEqual(bytes);
    expect(names(spoolDir(home))).toEqual([path.basename(target)]);

    const db = openSessionDb({ home });
    db.createSession({ id: 'sess-t', source: 'telegram', startedAt: 1_700_000_000 });
    const r = recoverPending({ home, store: db, logger: memoryLogger() });
    const texts = db.exportSession('sess-t')?.messages.map((m) => m.content);
    console.log(`row4b salvage → recovery: inserted ${String(r.inserted.length)}, rows ${String(texts?.length)}, batch removed ${String(r.batches[0]?.removed)}`);
    expect(r.errors).toEqual([]);
    expect(texts).toEqual(['one', 'two', 'three']);
    expect(r.batches[0]?.removed).toBe(true);
    expect(names(spoolDir(home))).toEqual([]);
    db.close();
  }, 60_000);

  it('an incomplete batch temp is moved aside as .partial, never deleted', async () => {
    const { home, temp } = await killedInside('write');
    const s = salvageTemps({ home, logger: memoryLogger() });
    console.log(`row4b salvage empty batch temp: adopted ${String(s.adopted.length)}, partial ${String(s.partial.length)}`);
    expect(s.adopted).toEqual([]);
    expect(s.partial).toEqual([{ temp, partialPath: path.join(spoolDir(home), `${path.basename(temp).slice(1)}.partial`), bytes: 0, detail: 'empty' }]);
    expect(names(spoolDir(home))).toEqual([`${path.basename(temp).slice(1)}.partial`]);
  }, 60_000);
});
