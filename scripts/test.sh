#!/usr/bin/env bash
# Runs every check and the whole test suite, as CI does. Installs
# redis-server (Debian/Ubuntu apt-get) when it is missing; the tests start
# their own servers on free loopback ports and stop them afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null 2>&1; then
  echo "== installing redis-server"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
  # The package starts a system service; the tests do not need it.
  $SUDO service redis-server stop >/dev/null 2>&1 || true
fi

echo "== generated code matches openapi.yaml"
go generate ./...
if [ -n "$(git status --porcelain -- api/oapi)" ]; then
  git --no-pager diff --stat -- api/oapi
  echo "api/oapi drifted from openapi.yaml: run 'go generate ./...' and commit" >&2
  exit 1
fi

echo "== go mod tidy"
go mod tidy -diff

echo "== gofmt, go vet"
unformatted="$(gofmt -l $(git ls-files '*.go'))"
if [ -n "$unformatted" ]; then echo "not gofmt-ed: $unformatted" >&2; exit 1; fi
go vet ./...

echo "== tests (race detector, real Redis: standalone, 3-master Cluster, embedded)"
go test -race -count=1 -timeout 20m ./...
