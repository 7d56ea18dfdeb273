/**
 * No silent limits (issue #23 row 12): a tree deeper than the walks go is said, with the path where they
 * stopped, by the scan and by the sweep; below the limit, a stale temp at any depth is found and swept.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempRoot } from '@hermes/test-utils';
import { MAX_TREE_DEPTH, scanTreeSync, sweepTempFilesSync } from '../src/index.js';

const TEMP = '.x.json.999999-1.0123456789ab.tmp';

/** home/pending_messages/d/d/… `levels` deep, a stale temp at `tempAt` levels and a 0644 payload at `fileAt`. */
function deepTree(levels: number, tempAt: number, fileAt: number): { home: string; spool: string; temp: string; file: string; dir: (n: number) => string } {
  const home = path.join(tempRoot(), 'home');
  const spool = path.join(home, 'pending_messages');
  const dir = (n: number): string => path.join(spool, ...Array<string>(n).fill('d'));
  fs.mkdirSync(dir(levels), { recursive: true, mode: 0o700 });
  const temp = path.join(dir(tempAt), TEMP);
  fs.writeFileSync(temp, '{"partial":', { mode: 0o600 });
  const old = new Date(Date.now() - 2 * 3_600_000);
  fs.utimesSync(temp, old, old);
  const file = path.join(dir(fileAt), 'f.json');
  fs.writeFileSync(file, '{}', { mode: 0o644 });
  return { home, spool, temp, file, dir };
}

describe('row 12: limits of the tree walks are findings', () => {
  it('row 12: a 300-level tree under pending_messages/: scan and sweep each name the directory where they stopped; the temp at depth 100 is found and swept', () => {
    const t = deepTree(300, 100, 280);
    // The spool is level 1 below the home; the walks enter MAX_TREE_DEPTH levels and name the next one.
    const stoppedAt = t.dir(MAX_TREE_DEPTH);
    let dirs = 0;
    const files: string[] = [];
    const scan = scanTreeSync(t.home, {
      directory: () => {
        dirs++;
        return true;
      },
      file: (e) => files.push(e.path),
      symlink: () => undefined,
    });
    const found = sweepTempFilesSync(t.home);
    const swept = sweepTempFilesSync(t.home, { remove: true });
    console.log(
      `row 12: 300 levels; scan visited ${String(dirs)} directories, ${String(files.length)} files, too-deep ${String(scan.tooDeep.length)} at depth ${String(scan.tooDeep[0]?.depth)}; ` +
        `sweep found ${String(found.found.length)} stale temp (depth 101), removed ${String(swept.removed.length)}, too-deep ${String(found.tooDeep.length)}`,
    );
    expect(MAX_TREE_DEPTH).toBe(256);
    expect(scan.tooDeep).toEqual([{ type: 'too-deep', path: stoppedAt, depth: 257, limit: 256 }]);
    expect(scan.errors).toEqual([]);
    expect(dirs).toBe(1 + 257); // the home, the spool and 256 levels below it (the last one seen, not entered)
    expect(files).toEqual([t.temp]); // the payload at depth 280 is below the limit: said by tooDeep, not visited
    expect(found.tooDeep).toEqual([{ type: 'too-deep', path: stoppedAt, depth: 257, limit: 256 }]);
    expect(found.found.map((f) => [f.path, f.stale])).toEqual([[t.temp, true]]);
    expect(swept.removed).toEqual([t.temp]);
    expect(swept.tooDeep).toHaveLength(1);
    expect(fs.existsSync(t.temp)).toBe(false);
    expect(fs.existsSync(t.file)).toBe(true);
  });

  it('a tree within the limit has no too-deep entry; `keep` reports the temps directly in a directory and removes none of them', () => {
    const t = deepTree(20, 0, 20);
    const nested = path.join(t.dir(3), TEMP);
    fs.writeFileSync(nested, '{', { mode: 0o600 });
    const old = new Date(Date.now() - 2 * 3_600_000);
    fs.utimesSync(nested, old, old);
    const scan = scanTreeSync(t.home, { directory: () => true, file: () => undefined, symlink: () => undefined });
    expect(scan.tooDeep).toEqual([]);
    const r = sweepTempFilesSync(t.home, { remove: true, keep: [t.spool] });
    expect(r.found.map((f) => f.path).sort()).toEqual([nested, t.temp].sort());
    expect(r.removed).toEqual([nested]);
    expect(r.tooDeep).toEqual([]);
    expect(fs.existsSync(t.temp)).toBe(true);
  });
});
