#!/usr/bin/env bash
# Runs every check and the whole test suite, as CI does. Installs
# redis-server (Debian/Ubuntu apt-get) when it is missing; the tests start
# their own servers on free loopback ports and stop them afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
updated=""
apt_install() {
  [ -n "$updated" ] || { $SUDO apt-get update -qq; updated=1; }
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}
if ! command -v redis-server >/dev/null 2>&1; then
  echo "== installing redis-server"
  apt_install redis-server
  # The package starts a system service; the tests do not need it.
  $SUDO service redis-server stop >/dev/null 2>&1 || true
fi
if ! command -v jq >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
  echo "== installing curl and jq (the README walkthrough's test runs it as written)"
  apt_install curl jq
fi
if ! command -v chromium >/dev/null 2>&1; then
  echo "== installing chromium (the demo's browser test)"
  apt_install chromium
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "== installing nodejs and npm (the TypeScript SDK)"
  apt_install nodejs npm
fi

echo "== generated code matches openapi.yaml, and its event schemas the event types"
go generate ./...
if [ -n "$(git status --porcelain -- api/oapi sdk/go/client.gen.go openapi.yaml)" ]; then
  git --no-pager diff --stat -- api/oapi sdk/go/client.gen.go openapi.yaml
  echo "api/oapi, sdk/go/client.gen.go or openapi.yaml's event schemas drifted (from openapi.yaml, rooms/events.go, lobby/events.go): run 'go generate ./...' and commit" >&2
  exit 1
fi

echo "== go mod tidy"
go mod tidy -diff

echo "== gofmt, go vet"
unformatted="$(gofmt -l $(git ls-files '*.go'))"
if [ -n "$unformatted" ]; then echo "not gofmt-ed: $unformatted" >&2; exit 1; fi
go vet ./...

echo "== govulncheck (known-vulnerable code called)"
scripts/vulncheck.sh

echo "== deploy/: Dockerfile, compose file, HAProxy, Prometheus alerts, Grafana dashboard, Kubernetes manifests"
deploy/lint.sh

echo "== tests (race detector, real Redis: standalone, 3-master Cluster, embedded)"
# Four packages at a time, not GOMAXPROCS (2 here): the suites mostly wait
# (on Redis failovers, leases, timers, realsyncd processes): the store's
# test binary used ~80 s of CPU in its 457 s, cmd/realsyncd's whole run
# (realsyncd and Redis processes too) 79 s in 271 s. Each package's own
# tests keep -parallel's default. The longest packages are named first: go
# test builds and runs packages in the order given, and ./... alone started
# the store (the longest by minutes) last of them, 2.5 minutes in. Their
# results are printed in that order too: nothing shows until the store's.
go test -race -count=1 -timeout 20m -p 4 ./store/ ./cmd/realsyncd/ ./api/ ./store/tickets/ ./...

echo "== fuzz targets, a few seconds each"
scripts/fuzz.sh

echo "== C# SDK (Unity): .NET Standard 2.1 build with Mono, tests against realsyncd (installs mono when missing)"
"sdk/csharp/Tests~/run.sh"

echo "== TypeScript SDK: generated types and the demo's bundle match, Node and browser tests"
(cd sdk/typescript && npm ci --no-audit --no-fund --loglevel=error && npm run --silent generate && npm run --silent bundle)
if [ -n "$(git status --porcelain -- sdk/typescript/src/schema.ts web/static/realsync.js)" ]; then
  git --no-pager diff --stat -- sdk/typescript/src/schema.ts web/static/realsync.js
  echo "the SDK's generated types or the demo bundle drifted: run 'npm run generate && npm run bundle' in sdk/typescript and commit" >&2
  exit 1
fi
(cd sdk/typescript && npm test --silent)

echo "== TypeScript SDK as published: npm publish --dry-run, the packed tarball in a strict consumer (Node and browser)"
sdk/typescript/scripts/consumer-test.sh
