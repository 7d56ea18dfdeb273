import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = path.resolve(fileURLToPath(new URL('../../..', import.meta.url)));

// Every published package, by directory. Literal on purpose: adding a package means adding it here.
// The platform packages are packed and installed too, but not checked like the others (a prebuilt .node file,
// no dist/ to import): fs-policy's tarball names this machine's as an optional dependency, and installing it from
// its tarball keeps npm from looking the name up on the public registry. tooling/release-test checks its tarball.
const PUBLISHED: readonly [dir: string, name: string][] = [
  ['packages/fs-policy', '@hermes/fs-policy'],
  ['packages/redact', '@hermes/redact'],
  ['packages/config', '@hermes/config'],
  ['packages/session-db', '@hermes/session-db'],
  ['packages/gateway', '@hermes/gateway'],
  ['packages/cli', '@hermes/cli'],
  ['packages/trajectory', '@hermes/trajectory'],
  ['packages/moa-trace', '@hermes/moa-trace'],
  ['apps/hermes-fs', 'hermes-fs'],
  ['apps/hermes-gateway', 'hermes-gateway'],
];

/**
 * A user's environment for the consumer's npm: without what `pnpm test` exports to its children (npm_config_* —
 * this workspace's engineStrict among them, which would fail on hermes-gateway's cookie 2 dependency, whose
 * engines say Node >= 22 although it runs on 20.19+ — and pnpm's NODE_PATH).
 */
function userEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(npm_|pnpm_)/i.test(key) && key !== 'NODE_PATH' && key !== 'INIT_CWD'));
}

/** The platform package of this machine, when it has one and its addon is built (`pnpm build`). */
const PLATFORM: readonly [dir: string, name: string][] =
  process.platform === 'linux' && process.arch === 'x64' && fs.existsSync(path.join(root, 'packages/fs-policy-linux-x64-gnu/fs-policy.node'))
    ? [['packages/fs-policy-linux-x64-gnu', '@hermes/fs-policy-linux-x64-gnu']]
    : [];

describe('packed tarballs install and load outside the workspace', () => {
  let work: string;
  let project: string;
  const tarballs: string[] = []; // of PUBLISHED, checked below
  const platformTarballs: string[] = []; // installed only

  beforeAll(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-pack-'));
    const packs = path.join(work, 'packs');
    fs.mkdirSync(packs);
    for (const [dir, name] of [...PUBLISHED, ...PLATFORM]) {
      // One directory per package: @hermes/gateway and hermes-gateway both pack to hermes-gateway-<version>.tgz.
      const dest = path.join(packs, dir.replace('/', '-'));
      fs.mkdirSync(dest);
      const out = execFileSync('pnpm', ['pack', '--pack-destination', dest], { cwd: path.join(root, dir), encoding: 'utf8' });
      const tgz = out.trim().split('\n').pop() ?? '';
      (PLATFORM.some(([, n]) => n === name) ? platformTarballs : tarballs).push(path.isAbsolute(tgz) ? tgz : path.join(dest, path.basename(tgz)));
    }
    project = path.join(work, 'consumer');
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...tarballs, ...platformTarballs], { cwd: project, stdio: 'pipe', env: userEnv() });
  });

  afterAll(() => {
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('every tarball holds dist with types and no sources or tests', () => {
    for (const tgz of tarballs) {
      const files = execFileSync('tar', ['-tzf', tgz], { encoding: 'utf8' }).trim().split('\n');
      expect(files, tgz).toContain('package/package.json');
      expect(files, tgz).toContain('package/dist/index.js');
      expect(files, tgz).toContain('package/dist/index.d.ts');
      expect(files.filter((f) => f.startsWith('package/src/') || f.startsWith('package/test/')), tgz).toEqual([]);
      const manifest = JSON.parse(execFileSync('tar', ['-xzOf', tgz, 'package/package.json'], { encoding: 'utf8' })) as {
        dependencies?: Record<string, string>;
      };
      for (const [dep, range] of Object.entries(manifest.dependencies ?? {})) {
        expect(range, `${tgz}: ${dep}`).not.toMatch(/^workspace:/);
      }
    }
  });

  it('imports every package from plain Node ESM', () => {
    const script = PUBLISHED.map(([, name]) => `await import(${JSON.stringify(name)}).then((m) => console.log(${JSON.stringify(name)}, Object.keys(m).length));`).join('\n');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: project, encoding: 'utf8' });
    for (const [, name] of PUBLISHED) expect(out).toMatch(new RegExp(`^${name.replace('/', '\\/')} [1-9]\\d*$`, 'm'));
  });

  it('requires every package from CommonJS', () => {
    const script = PUBLISHED.map(([, name]) => `console.log(${JSON.stringify(name)}, Object.keys(require(${JSON.stringify(name)})).length);`).join('\n');
    fs.writeFileSync(path.join(project, 'probe.cjs'), script);
    const out = execFileSync(process.execPath, ['probe.cjs'], { cwd: project, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    for (const [, name] of PUBLISHED) expect(out).toMatch(new RegExp(`^${name.replace('/', '\\/')} [1-9]\\d*$`, 'm'));
  });

  it.runIf(PLATFORM.length > 0)('fs-policy installed with its platform package runs native', () => {
    const script = `import('@hermes/fs-policy').then((m) => console.log(m.anchorInfo().mode))`;
    // NODE_PATH unset: pnpm's bin shims point it at the workspace, where every package is found.
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: project, encoding: 'utf8', env: { ...process.env, NODE_PATH: '' } });
    expect(out.trim()).toBe('native');
  });

  it('runs the installed CLI', () => {
    const out = execFileSync(path.join(project, 'node_modules', '.bin', 'hermes-fs'), ['--help'], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
    expect(out).toContain('Usage: hermes-fs');
    expect(out).toContain('matrix');
    expect(out).toContain('doctor');
  });
});
