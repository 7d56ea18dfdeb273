#!/usr/bin/env node
// Builds the Node-API addon of @hermes/fs-policy with the system C++ compiler, into the platform package
// (packages/fs-policy-linux-x64-gnu/fs-policy.node). No node-gyp and no header download: the Node-API headers
// come from the `node-api-headers` and `node-addon-api` packages; the napi_* symbols stay undefined and are
// resolved by Node when it loads the addon, so one binary serves every Node >= 20 (NAPI_VERSION 8).
//
// Usage: node native/build.mjs [--force]
//   Skips the compile when the binary is newer than every source. On a platform other than linux-x64-gnu, or
//   without a compiler, it says so and exits 0 (the package then resolves names through /proc/self/fd), except
//   under CI=true, where a missing compiler on linux-x64 is an error (exit 1).
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.resolve(here, '..');
const outDir = path.resolve(pkgDir, '..', 'fs-policy-linux-x64-gnu');
const out = path.join(outDir, 'fs-policy.node');
const srcDir = path.join(here, 'src');
const force = process.argv.includes('--force');
const CXX = process.env.CXX ?? 'g++';

function glibc() {
  const report = process.report?.getReport?.();
  return typeof report?.header?.glibcVersionRuntime === 'string';
}

if (process.platform !== 'linux' || process.arch !== 'x64' || !glibc()) {
  console.log(`fs-policy native: not built (${process.platform}-${process.arch}${process.platform === 'linux' && !glibc() ? '-musl' : ''} has no build here); the package resolves names through /proc/self/fd`);
  process.exit(0);
}

const sources = fs.readdirSync(srcDir).map((f) => path.join(srcDir, f));
const self = fileURLToPath(import.meta.url);
if (!force && fs.existsSync(out)) {
  const built = fs.statSync(out).mtimeMs;
  if ([...sources, self].every((f) => fs.statSync(f).mtimeMs <= built)) {
    console.log(`fs-policy native: up to date (${path.relative(process.cwd(), out) || out})`);
    process.exit(0);
  }
}

const require = createRequire(path.join(pkgDir, 'package.json'));
const napiHeaders = path.join(path.dirname(require.resolve('node-api-headers/package.json')), 'include');
const addonApi = path.dirname(require.resolve('node-addon-api/package.json'));

const probe = spawnSync(CXX, ['--version'], { encoding: 'utf8' });
if (probe.error !== undefined || probe.status !== 0) {
  const why = `the C++ compiler ${JSON.stringify(CXX)} could not run (${probe.error?.message ?? `exit ${String(probe.status)}`})`;
  if (process.env.CI === 'true') {
    console.error(`fs-policy native: build failed: ${why}. Fix: install g++ (Debian: apt-get install g++)`);
    process.exit(1);
  }
  console.log(`fs-policy native: not built: ${why}; the package resolves names through /proc/self/fd. Fix: install g++`);
  process.exit(0);
}

const args = [
  '-std=c++17',
  '-O2',
  '-fPIC',
  '-shared',
  '-fexceptions',
  '-fstack-protector-strong',
  '-D_FORTIFY_SOURCE=2',
  '-fvisibility=hidden',
  '-Wall',
  '-Wextra',
  '-Werror',
  '-DNAPI_VERSION=8',
  '-DNAPI_CPP_EXCEPTIONS',
  '-DNODE_ADDON_API_DISABLE_DEPRECATED',
  '-I',
  napiHeaders,
  '-I',
  addonApi,
  '-static-libstdc++',
  '-static-libgcc',
  '-Wl,-z,relro,-z,now',
  '-Wl,-z,noexecstack',
  '-o',
  `${out}.tmp`,
  path.join(srcDir, 'addon.cc'),
];
fs.mkdirSync(outDir, { recursive: true });
const started = Date.now();
const r = spawnSync(CXX, args, { stdio: 'inherit' });
if (r.status !== 0) {
  fs.rmSync(`${out}.tmp`, { force: true });
  console.error(`fs-policy native: ${CXX} failed (exit ${String(r.status)}); see the compiler output above`);
  process.exit(1);
}
fs.renameSync(`${out}.tmp`, out);
console.log(`fs-policy native: built ${path.relative(process.cwd(), out) || out} in ${String(Date.now() - started)} ms`);
