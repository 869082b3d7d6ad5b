#!/usr/bin/env bash
# The SDK as a game gets it: `npm publish --dry-run` must be clean, then the
# packed tarball is installed into a fresh project in a temp dir (from the npm
# cache when it holds the dependencies) and a small game is type-checked with
# strict and no skipLibCheck, once for Node (nodenext, Node types) and once
# for the browser (bundler resolution, DOM, no Node types); the Node game then
# runs against a real realsyncd built from this repository.
set -euo pipefail
cd "$(dirname "$0")/.."
sdk="$PWD"
root="$(cd ../.. && pwd)"
tmp="$(mktemp -d)"
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# Warnings about the machine, not the package: npm's complaint about this
# machine's own config (nodedir), and that nobody is logged in (a dry run).
machine_noise='Unknown (user|env) config|requires you to be logged in'

# dist built once here; publish and pack below would each build it again
# (prepack), the same files twice more.
echo "-- npm run build"
npm run --silent build

echo "-- npm publish --dry-run"
npm publish --dry-run --ignore-scripts >"$tmp/publish.log" 2>&1 || { cat "$tmp/publish.log"; exit 1; }
if grep -i 'warn' "$tmp/publish.log" | grep -Ev "$machine_noise"; then
  echo "npm publish --dry-run warned (above)" >&2
  exit 1
fi
for f in package.json README.md LICENSE dist/src/index.js dist/src/index.d.ts dist/src/browser.js dist/src/schema.d.ts; do
  grep -q " $f\$" "$tmp/publish.log" || { cat "$tmp/publish.log"; echo "the package lacks $f" >&2; exit 1; }
done
if grep -E ' (src/|dist/test/|test/|scripts/)' "$tmp/publish.log"; then
  echo "the package ships files a consumer does not need (above)" >&2
  exit 1
fi

echo "-- npm pack, install into a fresh project"
tgz="$(npm pack --silent --ignore-scripts --pack-destination "$tmp" 2>/dev/null | tail -n 1)"
cp -r scripts/consumer "$tmp/game"
cd "$tmp/game"
tsv="$(node -p "require('$sdk/package.json').devDependencies.typescript")"
nodetypes="$(node -p "require('$sdk/package.json').devDependencies['@types/node']")"
npm install --prefer-offline --no-audit --no-fund --loglevel=error \
  "$tmp/$tgz" "typescript@$tsv" "@types/node@$nodetypes" 2>&1 | grep -Ev "$machine_noise" || true
test -f node_modules/@realsync/sdk/dist/src/index.d.ts

echo "-- type-check a strict game: Node"
npx --no-install tsc -p tsconfig.node.json
echo "-- type-check a strict game: browser"
npx --no-install tsc -p tsconfig.browser.json

echo "-- run the Node game against a real realsyncd"
"$root/scripts/build-realsyncd.sh" "$tmp/realsyncd"
REALSYNC_ADDR=127.0.0.1:0 REALSYNC_REDIS_URL="" REALSYNC_REDIS_CLUSTER_ADDRS="" REALSYNC_JWT_SECRET=consumer-test \
  "$tmp/realsyncd" 2>"$tmp/server.log" &
server=$!
addr=""
for _ in $(seq 1 200); do
  if grep -q 'msg=ready' "$tmp/server.log"; then
    addr="$(sed -n 's/.*msg=listening addr=\([^ ]*\).*/\1/p' "$tmp/server.log" | head -n 1)"
    break
  fi
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
[ -n "$addr" ] || { cat "$tmp/server.log"; echo "realsyncd did not start" >&2; exit 1; }
REALSYNC_URL="http://$addr" timeout 60 node out/game.js
echo "consumer test: ok"
