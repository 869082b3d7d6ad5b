#!/usr/bin/env bash
# Builds realsyncd at the path given, as deploy/Dockerfile builds the
# image's binary: static (CGO_ENABLED=0), -trimpath, stripped. The tests
# that run a realsyncd binary use it (the C# SDK's, the TypeScript SDK's,
# the published package's consumer test), and scripts/test.sh runs go
# generate and go vet with the same CGO_ENABLED and -trimpath: one compile
# of the module serves them, deploy/lint.sh's build of the Dockerfile's
# command, and the binary those tests run is the one the image ships.
# usage: scripts/build-realsyncd.sh OUTPUT
set -euo pipefail
mkdir -p "$(dirname "$1")"
out="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
cd "$(dirname "$0")/.."
CGO_ENABLED=0 exec go build -trimpath -ldflags="-s -w" -o "$out" ./cmd/realsyncd
