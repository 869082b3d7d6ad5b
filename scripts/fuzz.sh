#!/usr/bin/env bash
# Runs every fuzz target for a bounded time each (FUZZTIME, default 4s: all ten in about a minute on 2 cores),
# after its seed corpus (the f.Add seeds and testdata/fuzz, which plain
# `go test` also runs). A failure leaves the failing input in the package's
# testdata/fuzz directory: commit it with the fix, so it is replayed forever.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-4s}
# FUZZWORKERS: processes fuzzing at once (go test -parallel; default
# GOMAXPROCS). CI (scripts/test.sh) gives 1: there the other lanes use the
# other core, and two workers only took CPU from them.
workers=()
[ -z "${FUZZWORKERS:-}" ] || workers=(-test.parallel "$FUZZWORKERS")
# The workers share inputs through a file in TMPDIR, written out to disk at
# about 40 MiB/s of fuzzing: in memory when /dev/shm can take it (as
# scripts/test.sh sets it for the whole suite).
# shellcheck source=scripts/tmpfs.sh
. scripts/tmpfs.sh
targets=(
  "./api FuzzDecodeJSONObject"
  "./api FuzzVerifyToken"
  "./api FuzzAppendRoom"
  "./rooms FuzzParseAttrQuery"
  "./rooms FuzzStatePatch"
  "./rooms FuzzMyRoomsCursor"
  "./lobby FuzzDecodeCursor"
  "./sse FuzzParseCursor"
  "./sse FuzzAppendFrame"
  "./sdk/go FuzzSSEParser"
)
# Each package's test binary is built once for its targets and run for
# each in the package's folder, as go test runs it, with go test's cache
# of generated inputs. Only the package itself is instrumented for
# coverage guidance (-d=libfuzzer, what go test -fuzz gives every package
# of the binary), and the binary is built as scripts/test.sh's checks and
# scripts/build-realsyncd.sh build (CGO_ENABLED=0, -trimpath), so that
# every other package is theirs, compiled once: go test -fuzz compiled
# the whole of each test binary's imports a third time, beside the race
# detector's and the checks' (the api package's tests import most of
# the module), and linked the binary anew
# for each target; after a change to two packages that was 144 s of the
# store lane on a loaded CI, for 4 s of fuzzing. The fuzzed code is ours
# (decoders, parsers, encoders); without encoding/json and the rest
# instrumented a target runs about 15 times the inputs a second. For a
# long run of one target with every package instrumented, use go test
# -fuzz itself. A package whose fuzzed code lives in another is named in
# instrument: the api package's FuzzVerifyToken parses with golang-jwt.
declare -A instrument=([./api]="github.com/golang-jwt/jwt/v5")
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when -fuzztime ends while a worker is busy (go.dev/issue/75804,
# fixed in Go 1.27): no input failed and none is written. Such a run, and
# only such a run (no new file under testdata/fuzz), is run again, up to
# three runs in all (on a loaded machine two in a row were seen to hit it,
# 2026-11-24); a written failing input, or any other failure, fails at once.
module=$(go list -m)
gocache=$(go env GOCACHE)
tmp=$(mktemp -d)
log="$tmp/log"
trap 'rm -rf "$tmp"' EXIT
fuzz_once() { # pkg name log
  local bin cache
  bin="$tmp/$(tr / _ <<<"${1#./}").test"
  if [ ! -x "$bin" ]; then
    local flags=(-gcflags="$module/${1#./}=-d=libfuzzer") p
    for p in ${instrument[$1]:-}; do flags+=(-gcflags="$p=-d=libfuzzer"); done
    CGO_ENABLED=0 go test -c -trimpath "${flags[@]}" -o "$bin" "$1" >"$3" 2>&1 || return
  fi
  cache="$gocache/fuzz/$module/${1#./}"
  (cd "$1" && "$bin" -test.run '^$' -test.fuzz "^${2}\$" -test.fuzztime "$fuzztime" -test.timeout 10m \
    -test.fuzzcachedir "$cache" "${workers[@]}") >"$3" 2>&1
}
# show LOG: a target's output, of its progress lines only the last
show() { grep -v '^fuzz: elapsed' "$1" || true; grep '^fuzz: elapsed' "$1" | tail -n 1 || true; }
inputs() { if [ -d "$1" ]; then ls "$1" | wc -l; else echo 0; fi; } # files in a corpus dir
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  echo "-- $pkg $name ($fuzztime)"
  corpus="$pkg/testdata/fuzz/$name"
  before=$(inputs "$corpus")
  t0=$(date +%s)
  if fuzz_once "$pkg" "$name" "$log"; then
    show "$log"
    # the wall time, the binary's build included
    echo "   ($(( $(date +%s) - t0 )) s in all)"
    continue
  fi
  show "$log"
  ok=
  for again in 2 3; do
    [ "$(inputs "$corpus")" = "$before" ] && grep -q '^    context deadline exceeded$' "$log" || break
    echo "-- $name: the coordinator's deadline race (go.dev/issue/75804), no failing input: run $again of 3"
    if fuzz_once "$pkg" "$name" "$log"; then ok=1; show "$log"; break; fi
    show "$log"
  done
  [ -n "$ok" ] && continue
  echo "fuzzing $name failed" >&2
  exit 1
done
