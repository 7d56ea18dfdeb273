#!/usr/bin/env bash
# The @hermes/fs-policy addon under AddressSanitizer and UndefinedBehaviorSanitizer: the addon's own tests
# (native.test.ts, native-modes.test.ts with its 5,000-call fuzz) and the attack suite, run by a Node that has
# libasan preloaded and loads the sanitized build of the addon instead of the shipped one.
#
# Usage (from anywhere in a checkout, after `pnpm install`; Linux with glibc and g++):
#   pnpm test:asan [vitest filters]        (default: the three files above; e.g. packages/fs-policy/test for all)
# Environment:
#   HERMES_TEST_JSON  where vitest's JSON report goes, the verdict beside it (.ci/run sets it, for
#                     tooling/scripts/vitest-summary.mjs --also); default: in the temp directory
#   CXX               the compiler of the sanitized builds (default g++); its libasan is the one preloaded
#
# What it does, in a new temp directory removed at the end:
#   1. builds @hermes/fs-policy (dist, the shipped addon) and checks the shipped binary: BIND_NOW, GNU_RELRO, a
#      non-executable stack, the stack protector, no asanSelfTest;
#   2. builds two sanitized addons with native/build.mjs --asan: the one under test, and a --selftest one whose
#      asanSelfTest() writes past a heap block (the fuzz calls every exported function, so never the same file);
#   3. self-test: calls asanSelfTest() and requires the process to die with an AddressSanitizer
#      heap-buffer-overflow report (the sanitizer is live, the preload works);
#   4. checks that the loader takes the sanitized addon: anchorInfo() is `native`, and the process's shared
#      objects hold that file and libasan, not the shipped binary;
#   5. runs vitest (project fs-policy) with LD_PRELOAD=libasan, HERMES_FS_NATIVE_PATH=<sanitized addon> and every
#      report fatal (ASAN_OPTIONS detect_leaks=0: Node does not free everything at exit, by design). Reports are
#      written to files (log_path), so that one in any child process is seen too.
# Exit 0 only when the self-test died as expected, vitest exited 0 with no failed test, and no sanitizer report
# was written. The last line gives the counts and the time.
#
# The attack suite's victims and attackers run as other uids through runAs (@hermes/test-utils), which passes
# LD_PRELOAD, ASAN_OPTIONS, UBSAN_OPTIONS and HERMES_FS_NATIVE_PATH on: they load the sanitized addon too (the
# temp directory is readable by them, its reports directory writable).
set -euo pipefail

die() {
  echo "asan-test: $*" >&2
  exit 1
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
[ -f "$repo/packages/fs-policy/native/build.mjs" ] || die "not a checkout of this repository: $repo"
[ -d "$repo/node_modules" ] || die "no node_modules in $repo. Fix: run pnpm install first"
[ "$(uname -s)" = Linux ] || die "runs on Linux (this is $(uname -s))"
cxx=${CXX:-g++}
libasan=$("$cxx" -print-file-name=libasan.so) || die "$cxx does not run. Fix: install g++ (Debian: apt-get install g++)"
[ -f "$libasan" ] || die "$cxx has no libasan.so (it answered ${libasan}). Fix: install the sanitizer runtime (Debian: apt-get install libasan8)"

work=$(mktemp -d "${TMPDIR:-/tmp}/hermes-asan.XXXXXX")
trap 'rm -rf "$work"' EXIT
work=$(cd "$work" && pwd -P) # as the loader names the file it loaded (symlinks resolved)
chmod 0755 "$work" # the attack suite's other uids load the sanitized addon from here
report=${HERMES_TEST_JSON:-$work/vitest.json}
[[ $report == /* ]] || report=$PWD/$report # vitest runs from the repository root
logs=$work/reports
mkdir -p "$logs" "$(dirname "$report")"
chmod 1777 "$logs" # and write their reports here
rm -f "$report" "${report%.json}.verdict.json"
started=$(date +%s%N)

# 1. builds, and the shipped binary
echo "asan-test: building @hermes/fs-policy and its addon"
(cd "$repo" && pnpm exec turbo run build --filter=@hermes/fs-policy --output-logs=errors-only >/dev/null) || die "the build of @hermes/fs-policy failed. Run: pnpm exec turbo run build --filter=@hermes/fs-policy"
shipped=$repo/packages/fs-policy-linux-$(node -p process.arch)-gnu/fs-policy.node
[ -f "$shipped" ] || die "the shipped addon $shipped was not built (no platform package for this machine?)"
# (readelf's output captured first: `grep -q` in a pipe would end it early, and pipefail count that as a failure)
dynamic=$(readelf -d "$shipped") && segments=$(readelf -lW "$shipped") && symbols=$(readelf --dyn-syms -W "$shipped") || die "readelf cannot read $shipped"
grep -q 'BIND_NOW' <<<"$dynamic" || die "$shipped lacks BIND_NOW (-z now)"
grep -q 'GNU_RELRO' <<<"$segments" || die "$shipped lacks GNU_RELRO (-z relro)"
stack=$(grep 'GNU_STACK' <<<"$segments") || die "$shipped has no GNU_STACK header (an executable stack)"
[[ $stack != *RWE* ]] || die "$shipped has an executable stack"
grep -q '__stack_chk_fail' <<<"$symbols" || die "$shipped does not use the stack protector"
if grep -q asanSelfTest "$shipped"; then die "$shipped contains asanSelfTest: the self-test leaked into the shipped build"; fi
echo "asan-test: shipped $shipped: BIND_NOW, GNU_RELRO, non-executable stack, stack protector, no asanSelfTest"

# 2. the sanitized builds, side by side
addon=$work/fs-policy-asan.node
selftest=$work/fs-policy-asan-selftest.node
build="$repo/packages/fs-policy/native/build.mjs"
node "$build" --asan --out "$addon" >"$work/build.log" 2>&1 &
build_pid=$!
node "$build" --asan --selftest --out "$selftest" >"$work/build-selftest.log" 2>&1 || {
  wait "$build_pid" || true
  cat "$work/build-selftest.log" >&2
  die "the --asan --selftest build failed"
}
wait "$build_pid" || { cat "$work/build.log" >&2; die "the --asan build failed"; }
cat "$work/build.log" "$work/build-selftest.log"
if grep -q asanSelfTest "$addon"; then die "$addon contains asanSelfTest (only the --selftest build may)"; fi

# Every sanitizer report is fatal. No leak check: Node does not free everything at exit, by design.
asan_options=detect_leaks=0:abort_on_error=1:halt_on_error=1
ubsan_options=halt_on_error=1:abort_on_error=1:print_stacktrace=1

# 3. the self-test: the process must die with the sanitizer's report
# (braces: bash's own "Aborted" job line goes to /dev/null; the report is in selftest.err)
status=0
{ env LD_PRELOAD="$libasan" ASAN_OPTIONS=$asan_options UBSAN_OPTIONS=$ubsan_options \
  node -e 'require(process.argv[1]).asanSelfTest(); console.log("asanSelfTest returned")' "$selftest" >"$work/selftest.out" 2>"$work/selftest.err"; } 2>/dev/null || status=$?
if [ "$status" = 0 ] || ! grep -q 'ERROR: AddressSanitizer: heap-buffer-overflow' "$work/selftest.err"; then
  cat "$work/selftest.out" "$work/selftest.err" >&2
  die "self-test: asanSelfTest() should have been stopped by AddressSanitizer (exit $status); the sanitizer is not live"
fi
echo "asan-test: self-test: exit $status, as expected:"
grep -E 'ERROR: AddressSanitizer|^WRITE of size|^    #0 |^SUMMARY: AddressSanitizer' "$work/selftest.err" | sed 's/^/  /'

# 4. the loader takes the sanitized addon
(cd "$repo/packages/fs-policy" && env LD_PRELOAD="$libasan" ASAN_OPTIONS=$asan_options UBSAN_OPTIONS=$ubsan_options \
  HERMES_FS_NATIVE_PATH="$addon" HERMES_FS_ANCHOR=native node --input-type=module -e '
  import { anchorInfo } from "@hermes/fs-policy";
  const [addon, shipped, libasan] = process.argv.slice(1);
  const info = anchorInfo();
  const loaded = process.report.getReport().sharedObjects;
  console.log(`asan-test: anchorInfo() ${JSON.stringify(info)}; loaded ${loaded.filter((o) => o === addon || o === shipped || o === libasan).join(", ")}`);
  if (info.mode !== "native" || !loaded.includes(addon) || !loaded.includes(libasan) || loaded.includes(shipped)) {
    console.error("asan-test: the sanitized addon is not the one in use");
    process.exit(1);
  }' "$addon" "$shipped" "$libasan") || die "the loader did not take $addon through HERMES_FS_NATIVE_PATH"

# 5. the tests
[ "$#" -gt 0 ] || set -- packages/fs-policy/test/native.test.ts packages/fs-policy/test/native-modes.test.ts packages/fs-policy/test/attacks.test.ts
status=0
(cd "$repo" && env LD_PRELOAD="$libasan" ASAN_OPTIONS="$asan_options:log_path=$logs/asan" UBSAN_OPTIONS="$ubsan_options:log_path=$logs/ubsan" \
  HERMES_FS_NATIVE_PATH="$addon" HERMES_TEST_JSON="$report" node node_modules/vitest/vitest.mjs run --project fs-policy "$@") || status=$?
elapsed_s=$((($(date +%s%N) - started) / 1000000000))

reports=0
while IFS= read -r f; do
  reports=$((reports + 1))
  echo "asan-test: sanitizer report $(basename "$f"):" >&2
  cat "$f" >&2
done < <(find "$logs" -type f | sort)
[ "$reports" = 0 ] || [ "$status" != 0 ] || status=1
[ -f "$report" ] || die "vitest wrote no report (exit $status)"
# shellcheck disable=SC2016 # JavaScript, not shell: ${…} is a template literal
if ! counts=$(node -e '
  const r = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"));
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
  process.exit(r.numFailedTests > 0 || r.numTotalTests === 0 ? 1 : 0);' "$report"); then
  [ "$status" != 0 ] || status=1
fi
echo "asan-test: $counts, $reports sanitizer reports, exit $status, in ${elapsed_s} s"
exit "$status"
