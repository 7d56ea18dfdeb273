import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingFiles } from '../publish.mjs';

const missing = missingFiles as (dir: string, manifest: { files?: unknown[] }) => string[];

describe('publish: a package is never published without the files it lists', () => {
  it('names the plain entries of files that are missing; globs, negations and CHANGELOG.md are not checked', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-publish-test-'));
    try {
      fs.mkdirSync(path.join(dir, 'dist'));
      fs.writeFileSync(path.join(dir, 'README.md'), '');
      expect(missing(dir, { files: ['dist', 'fs-policy.node', 'public', 'CHANGELOG.md', '!dist/**/*.map', 'schema/*.json'] })).toEqual(['fs-policy.node', 'public']);
      fs.writeFileSync(path.join(dir, 'fs-policy.node'), '');
      expect(missing(dir, { files: ['dist', 'fs-policy.node'] })).toEqual([]);
      expect(missing(dir, {})).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('every public workspace package has what it lists once built', async () => {
    const { publishOrder } = (await import('../publish.mjs')) as { publishOrder: () => { name: string; dir: string; manifest: { files?: unknown[] } }[] };
    const gaps = publishOrder()
      .map((p) => [p.name, missing(p.dir, p.manifest)] as const)
      .filter(([, m]) => m.length > 0);
    expect(gaps).toEqual([]);
  });
});
