#!/usr/bin/env node
// Builds the Node-API addon of @hermes/fs-policy with a C++ compiler, into a platform package
// (packages/fs-policy-<target>/fs-policy.node). No node-gyp and no header download: the Node-API headers
// come from the `node-api-headers` and `node-addon-api` packages; the napi_* symbols stay undefined and are
// resolved by Node when it loads the addon, so one binary serves every Node >= 20 (NAPI_VERSION 8).
//
// Usage: node native/build.mjs [--force] [--target=linux-x64-gnu|linux-arm64-gnu]
//   Without --target, builds for this machine when it is one of the targets, with the system `g++` ($CXX).
//   A target other than this machine is a cross build with `<triple>-g++` (Debian: g++-aarch64-linux-gnu),
//   same flags. Skips the compile when the binary is newer than every source. On a platform with no target, or
//   without a compiler, it says so and exits 0 (the package then resolves names through /proc/self/fd), except
//   under CI=true, where a missing compiler for this machine's own target is an error (exit 1). A cross build
//   that was asked for and cannot run is always an error (exit 1).
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The targets: Node's arch, the GNU triple of the cross compiler, and the ELF machine `readelf -h` names. */
const TARGETS = {
  'linux-x64-gnu': { arch: 'x64', triple: 'x86_64-linux-gnu', debian: 'g++-x86-64-linux-gnu' },
  'linux-arm64-gnu': { arch: 'arm64', triple: 'aarch64-linux-gnu', debian: 'g++-aarch64-linux-gnu' },
};

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.resolve(here, '..');
const srcDir = path.join(here, 'src');
const force = process.argv.includes('--force');

function glibc() {
  const report = process.report?.getReport?.();
  return typeof report?.header?.glibcVersionRuntime === 'string';
}

const hostTarget = process.platform === 'linux' && glibc() ? Object.keys(TARGETS).find((t) => TARGETS[t].arch === process.arch) : undefined;
const targetArg = process.argv.find((a) => a.startsWith('--target='))?.slice('--target='.length);
const unknown = process.argv.slice(2).filter((a) => a !== '--force' && !a.startsWith('--target='));
if (unknown.length > 0 || (targetArg !== undefined && !(targetArg in TARGETS))) {
  console.error(`fs-policy native: usage: node native/build.mjs [--force] [--target=${Object.keys(TARGETS).join('|')}] (got ${JSON.stringify(process.argv.slice(2))})`);
  process.exit(2);
}

if (targetArg === undefined && hostTarget === undefined) {
  console.log(`fs-policy native: not built (${process.platform}-${process.arch}${process.platform === 'linux' && !glibc() ? '-musl' : ''} has no build here); the package resolves names through /proc/self/fd`);
  process.exit(0);
}
const target = targetArg ?? hostTarget;
const cross = target !== hostTarget;
const CXX = cross ? (process.env.CXX_CROSS ?? `${TARGETS[target].triple}-g++`) : (process.env.CXX ?? 'g++');
const outDir = path.resolve(pkgDir, '..', `fs-policy-${target}`);
const out = path.join(outDir, 'fs-policy.node');

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
  if (cross) {
    console.error(`fs-policy native: cross build for ${target} failed: ${why}. Fix: install the cross compiler (Debian: apt-get install ${TARGETS[target].debian}) or set CXX_CROSS`);
    process.exit(1);
  }
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
console.log(`fs-policy native: built ${path.relative(process.cwd(), out) || out} (${target}${cross ? `, cross, ${CXX}` : ''}) in ${String(Date.now() - started)} ms`);
