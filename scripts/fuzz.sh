#!/usr/bin/env bash
# Runs every fuzz target for a bounded time each (FUZZTIME, default 4s: all nine in about a minute on 2 cores),
# after its seed corpus (the f.Add seeds and testdata/fuzz, which plain
# `go test` also runs). A failure leaves the failing input in the package's
# testdata/fuzz directory: commit it with the fix, so it is replayed forever.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-4s}
targets=(
  "./api FuzzDecodeJSONObject"
  "./api FuzzVerifyToken"
  "./rooms FuzzParseAttrQuery"
  "./rooms FuzzStatePatch"
  "./rooms FuzzMyRoomsCursor"
  "./lobby FuzzDecodeCursor"
  "./sse FuzzParseCursor"
  "./sse FuzzAppendFrame"
  "./sdk/go FuzzSSEParser"
)
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  echo "-- $pkg $name ($fuzztime)"
  go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" | grep -v '^fuzz: elapsed' || { echo "fuzzing $name failed" >&2; exit 1; }
done
