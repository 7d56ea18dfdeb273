#!/usr/bin/env node
// Builds the Node-API addon of @hermes/fs-policy with a C++ compiler, into a platform package
// (packages/fs-policy-<target>/fs-policy.node). No node-gyp and no header download: the Node-API headers
// come from the `node-api-headers` and `node-addon-api` packages; the napi_* symbols stay undefined and are
// resolved by Node when it loads the addon, so one binary serves every Node >= 20 (NAPI_VERSION 8).
//
// Usage: node native/build.mjs [--force] [--target=linux-x64-gnu|linux-arm64-gnu]
//        node native/build.mjs --asan [--selftest] --out <file>
//   Without --target, builds for this machine when it is one of the targets, with the system `g++` ($CXX).
//   A target other than this machine is a cross build with `<triple>-g++` (Debian: g++-aarch64-linux-gnu),
//   same flags. Skips the compile when the binary is newer than every source. On a platform with no target, or
//   without a compiler, it says so and exits 0 (the package then resolves names through /proc/self/fd), except
//   under CI=true, where a missing compiler for this machine's own target is an error (exit 1). A cross build
//   that was asked for and cannot run is always an error (exit 1).
//
//   The shipped build is hardened (HARDENED below): -O2, _FORTIFY_SOURCE=2, _GLIBCXX_ASSERTIONS, a strong stack
//   protector, stack-clash protection, control-flow protection (CET on x64, PAC/BTI on arm64), full RELRO,
//   BIND_NOW, a non-executable stack, and every warning an error.
//
//   --asan builds this machine's addon under AddressSanitizer and UndefinedBehaviorSanitizer (-O1 -g, every
//   report fatal) into <file>, always compiling, never into a platform package: it is for tests only
//   (tooling/scripts/asan-test.sh loads it through HERMES_FS_NATIVE_PATH, with libasan preloaded into Node).
//   --selftest (with --asan only) adds `asanSelfTest()`, a deliberate heap overflow that shows the sanitizer is
//   live; it is a binary of its own, because the tests call every function the addon exports.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The targets: Node's arch, the GNU triple of the cross compiler, its Debian package, and its control-flow protection flags. */
const TARGETS = {
  'linux-x64-gnu': { arch: 'x64', triple: 'x86_64-linux-gnu', debian: 'g++-x86-64-linux-gnu', cfi: ['-fcf-protection=full'] },
  'linux-arm64-gnu': { arch: 'arm64', triple: 'aarch64-linux-gnu', debian: 'g++-aarch64-linux-gnu', cfi: ['-mbranch-protection=standard'] },
};

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.resolve(here, '..');
const srcDir = path.join(here, 'src');

function glibc() {
  const report = process.report?.getReport?.();
  return typeof report?.header?.glibcVersionRuntime === 'string';
}

const hostTarget = process.platform === 'linux' && glibc() ? Object.keys(TARGETS).find((t) => TARGETS[t].arch === process.arch) : undefined;
const platformDirs = Object.keys(TARGETS).map((t) => path.resolve(pkgDir, '..', `fs-policy-${t}`));

let force = false;
let asan = false;
let selftest = false;
let targetArg;
let outArg;
const unknown = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--force') force = true;
  else if (a === '--asan') asan = true;
  else if (a === '--selftest') selftest = true;
  else if (a.startsWith('--target=')) targetArg = a.slice('--target='.length);
  else if (a.startsWith('--out=')) outArg = a.slice('--out='.length);
  else if (a === '--out' && i + 1 < argv.length) outArg = argv[++i];
  else unknown.push(a);
}
const usage = `usage: node native/build.mjs [--force] [--target=${Object.keys(TARGETS).join('|')}] | --asan [--selftest] --out <file>`;
const misuse =
  unknown.length > 0 ? `unknown argument ${JSON.stringify(unknown[0])}`
  : targetArg !== undefined && !(targetArg in TARGETS) ? `unknown target ${JSON.stringify(targetArg)}`
  : asan && (outArg === undefined || outArg === '') ? '--asan needs --out <file>'
  : !asan && outArg !== undefined ? '--out is only for --asan (the shipped binary goes into its platform package)'
  : asan && targetArg !== undefined ? '--asan builds for this machine only (no --target)'
  : selftest && !asan ? '--selftest is only for --asan'
  : undefined;
if (misuse !== undefined) {
  console.error(`fs-policy native: ${misuse}; ${usage} (got ${JSON.stringify(argv)})`);
  process.exit(2);
}
if (asan) {
  // The sanitized build never replaces a shipped binary: not one of them, and not inside a platform package.
  const parent = path.dirname(path.resolve(outArg));
  const target = path.join(fs.existsSync(parent) ? fs.realpathSync(parent) : parent, path.basename(outArg));
  const inside = platformDirs.map((d) => (fs.existsSync(d) ? fs.realpathSync(d) : d)).find((d) => target === d || target.startsWith(`${d}${path.sep}`));
  if (inside !== undefined) {
    console.error(`fs-policy native: --asan --out ${JSON.stringify(outArg)} is inside the platform package ${inside}; name a file elsewhere (a temp directory)`);
    process.exit(2);
  }
  if (hostTarget === undefined) {
    console.error(`fs-policy native: --asan: no addon is built for ${process.platform}-${process.arch} (Linux with glibc, x64 or arm64 only)`);
    process.exit(1);
  }
}

if (targetArg === undefined && hostTarget === undefined) {
  console.log(`fs-policy native: not built (${process.platform}-${process.arch}${process.platform === 'linux' && !glibc() ? '-musl' : ''} has no build here); the package resolves names through /proc/self/fd`);
  process.exit(0);
}
const target = targetArg ?? hostTarget;
const cross = target !== hostTarget;
const CXX = cross ? (process.env.CXX_CROSS ?? `${TARGETS[target].triple}-g++`) : (process.env.CXX ?? 'g++');
const out = asan ? path.resolve(outArg) : path.resolve(pkgDir, '..', `fs-policy-${target}`, 'fs-policy.node');
const outDir = path.dirname(out);

const sources = fs.readdirSync(srcDir).map((f) => path.join(srcDir, f));
const self = fileURLToPath(import.meta.url);
if (!force && !asan && fs.existsSync(out)) {
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
  if (asan) {
    console.error(`fs-policy native: --asan build failed: ${why}. Fix: install g++ (Debian: apt-get install g++), or set CXX`);
    process.exit(1);
  }
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

/** Every build: C++17, position-independent, only the module entry point exported, every warning an error. */
const COMMON = [
  '-std=c++17',
  '-fPIC',
  '-shared',
  '-fexceptions',
  '-fvisibility=hidden',
  '-Wall',
  '-Wextra',
  '-Wformat=2',
  '-Werror',
  '-DNAPI_VERSION=8',
  '-DNAPI_CPP_EXCEPTIONS',
  '-DNODE_ADDON_API_DISABLE_DEPRECATED',
  '-D_GLIBCXX_ASSERTIONS',
  '-I',
  napiHeaders,
  '-I',
  addonApi,
  '-Wl,-z,relro,-z,now',
  '-Wl,-z,noexecstack',
];
/** The shipped build (native and cross): optimised and hardened; libstdc++ and libgcc linked in. */
const HARDENED = [
  '-O2',
  '-U_FORTIFY_SOURCE',
  '-D_FORTIFY_SOURCE=2',
  '-fstack-protector-strong',
  '-fstack-clash-protection',
  ...TARGETS[target].cfi,
  '-static-libstdc++',
  '-static-libgcc',
];
/**
 * The test build: every AddressSanitizer or UndefinedBehaviorSanitizer report stops the process. No
 * _FORTIFY_SOURCE (its checked calls would bypass the sanitizer's); libstdc++ dynamic, so that the sanitizer's
 * operator new/delete serve it.
 */
const SANITIZED = ['-O1', '-g', '-fsanitize=address,undefined', '-fno-sanitize-recover=all', '-fno-omit-frame-pointer', '-U_FORTIFY_SOURCE'];

const args = [...COMMON, ...(asan ? SANITIZED : HARDENED), ...(selftest ? ['-DHERMES_ASAN_SELFTEST'] : []), '-o', `${out}.tmp`, path.join(srcDir, 'addon.cc')];
fs.mkdirSync(outDir, { recursive: true });
const started = Date.now();
const r = spawnSync(CXX, args, { stdio: 'inherit' });
if (r.status !== 0) {
  fs.rmSync(`${out}.tmp`, { force: true });
  console.error(`fs-policy native: ${CXX} failed (exit ${String(r.status)}); see the compiler output above`);
  process.exit(1);
}
fs.renameSync(`${out}.tmp`, out);
console.log(`fs-policy native: built ${path.relative(process.cwd(), out) || out} (${target}${cross ? `, cross, ${CXX}` : ''}${asan ? ', AddressSanitizer + UndefinedBehaviorSanitizer' : ''}${selftest ? ', with asanSelfTest()' : ''}) in ${String(Date.now() - started)} ms`);
