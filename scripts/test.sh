#!/usr/bin/env bash
# Runs every check and the whole test suite, as CI does. Installs what it
# needs when it is missing (Debian/Ubuntu apt-get: redis-server, curl, jq,
# chromium, Mono, Node.js and npm, the deploy linters; npm packages with
# npm: README.md, "Two commands"); the tests start their own servers on
# free loopback ports and stop them afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
script_began=$(date +%s)
# Temporary files in memory when /dev/shm can take them (scripts/tmpfs.sh).
# shellcheck source=scripts/tmpfs.sh
. scripts/tmpfs.sh

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

# The checks build as scripts/build-realsyncd.sh does (CGO_ENABLED=0,
# -trimpath: deploy/Dockerfile's build), so that their compile of the module
# serves that script (the SDK tests' realsyncd) and deploy/lint.sh's build
# of the image's binary: a fourth set of compiled packages (beside the race
# detector's and the fuzzer's) costs about 170 s of CPU on a cold cache,
# 50 s after a change to a package most others import.
static_build() { CGO_ENABLED=0 "$@"; }
# Every build here is -trimpath: Go's build cache keys a package compiled
# without it by its folder, so a clone in a folder of its own (as CI
# makes) compiled the whole module again for the race detector, warm cache
# or not: 387 s of CPU where the same clone's second run took 82 s
# (2026-12-07, `go test -race -c` of every package; with -trimpath a
# clone in a new folder took 63 s). Every binary this script links
# (some 60 test binaries, realsyncd's for the end-to-end tests and the
# SDKs) is linked without DWARF (-w: the race detector's reports and
# panics read the symbol table, which stays): a race-built test binary
# links in 3.3 s of CPU instead of 4.4 s.
GOFLAGS="$(go env GOFLAGS) -trimpath -ldflags=-w"
export GOFLAGS

echo "== generated code matches openapi.yaml, and its event schemas the event types"
static_build go generate ./...
if [ -n "$(git status --porcelain -- api/oapi sdk/go/client.gen.go openapi.yaml)" ]; then
  git --no-pager diff --stat -- api/oapi sdk/go/client.gen.go openapi.yaml
  echo "api/oapi, sdk/go/client.gen.go or openapi.yaml's event schemas drifted (from openapi.yaml, rooms/events.go, lobby/events.go): run 'go generate ./...' and commit" >&2
  exit 1
fi

echo "== go mod tidy"
go mod tidy -diff

echo "== gofmt, go vet"
# shellcheck disable=SC2046 # one word per file
unformatted="$(gofmt -l $(git ls-files '*.go'))"
if [ -n "$unformatted" ]; then echo "not gofmt-ed: $unformatted" >&2; exit 1; fi
static_build go vet ./...
# staticcheck (pinned as a go tool): about 280 s of CPU on a cold cache,
# 2 s on a warm one (its own cache of facts, kept beside Go's build cache:
# a CI that keeps GOCACHE elsewhere than the user's cache folder keeps
# this one too); a deliberate use of a deprecated API says why with
# //lint:ignore
echo "== staticcheck"
STATICCHECK_CACHE="${STATICCHECK_CACHE:-$(dirname "$(go env GOCACHE)")/staticcheck}" static_build go tool staticcheck ./...

echo "== govulncheck (known-vulnerable code called)"
scripts/vulncheck.sh

# The rest runs in three lanes at once, each timed: the store package's
# tests (the longest package, about 7.5 minutes alone, and mostly
# waiting: on failovers, leases, paused servers; ~170 s of CPU) with the
# fuzz targets beside them, then the C# SDK and the deploy linters; the
# other Go packages; and the TypeScript SDK (in the foreground, printed as
# they run). One after the other they took 13 to 14 minutes on 2 cores.
# Every lane runs to its end; the script fails when any lane failed.
lanes="$(mktemp -d)"
declare -A lane_pid=()
# shellcheck disable=SC2317 # called by the trap
stop_lanes() {
  for pid in "${lane_pid[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
  rm -rf "$lanes"
}
trap stop_lanes EXIT
# The store package's test binary is built before the lanes start: built
# beside the other lanes' race builds, the packages they share (most of the
# module and its dependencies) were compiled twice at once, by two go
# commands that do not wait for each other's cache entries.
echo "== the store package's test binary (race detector)"
go test -race -c -o "$lanes/store.test" ./store/
began=$(date +%s)
echo "== the lanes start, $(( began - script_began )) s after the script did ($(date -u +%H:%M:%S) UTC)"
lane() { # name function [live]: runs function in the background, its output in a file (or here, live)
  set -m # its own process group, stopped as one when this script is interrupted
  if [ "${3:-}" = live ]; then timed "$1" "$2" & else timed "$1" "$2" >"$lanes/$1.log" 2>&1 & fi
  lane_pid[$1]=$!
  set +m
}
timed() { # name function: runs function, then prints its wall and CPU time (its processes' too)
  local TIMEFORMAT="== lane $1: %0R s, CPU %0U s user + %0S s sys"
  time "$2"
}
failed=""
await() { # name: waits for lane name and prints its output
  local rc=0
  wait "${lane_pid[$1]}" || rc=$?
  unset "lane_pid[$1]"
  echo "== lane $1: exit $rc after $(( $(date +%s) - began )) s"
  [ ! -f "$lanes/$1.log" ] || cat "$lanes/$1.log"
  [ "$rc" -eq 0 ] || failed="$failed $1"
}
elapsed() { echo "   ($(( $(date +%s) - began )) s)"; }

# The store package's tests run as three processes of one test binary
# (built once: two go test commands would each compile and link it), each
# with its own shared servers: those of Cluster topology (failovers, slot
# moves, added and removed masters, paused servers, the layout, repairs:
# mostly waiting), those of the player layer (sessions, statuses, user
# streams, presence, instances lapsing: mostly waiting on leases and
# debounces) and the rest (which run the suite's check that the scripts
# emitted every room event kind, store/main_test.go: it runs under
# -test.skip, not -test.run). Together they run every test and benchmark
# once. As two processes, the rest took 666 s of a 809 s run (224 s of
# CPU), the lane's longest part (2026-12-05).
store_topology='Paused|Failover|Master|Replica|Slot|Repair|FeedProbe|Ping|Deadline|Layout'
store_players='UserStatus|UserStream|Session|Lapse|Replac|Presence|Inbox|Offline|Lifecycle|DeadInstance|Holdings'
store_part() { # name flag... : runs one part, its output shown only when it fails (as go test does)
  local out="$lanes/store-$1.out" t0
  t0=$(date +%s)
  # as go test runs it: in the package's directory; every benchmark once
  # (its smallest size under the race detector: internal/race), after
  # the tests of the same run, so that scripts/bench.sh keeps working:
  # nothing else runs a benchmark between full runs of bench.sh, and two
  # broke unseen (a script's arguments moved, a lease's TTL rounded to 0)
  # and one stopped a full run
  if (cd store && "$lanes/store.test" -test.timeout=20m -test.benchtime 1x "${@:2}") >"$out" 2>&1; then
    echo "ok   store ($1: ${*:2}; $(grep -c '^Benchmark' "$out") benchmark lines)  $(( $(date +%s) - t0 )) s"
  else
    cat "$out"
    echo "FAIL store ($1: ${*:2})  $(( $(date +%s) - t0 )) s"
    return 1
  fi
}
store_tests() {
  echo "== tests of the store package (race detector, real Redis: standalone, 3-master Cluster, embedded)"
  local rc=0 topology players fuzz
  store_part topology -test.run "$store_topology" -test.bench "$store_topology" >"$lanes/store-topology.log" 2>&1 &
  topology=$!
  store_part players -test.run "$store_players" -test.bench "$store_players" -test.skip "$store_topology" >"$lanes/store-players.log" 2>&1 &
  players=$!
  # The fuzz targets run in this lane, beside the tests (after them, they
  # were its last 100 s, 2026-12-05): in the go lane, after a change most
  # packages import, they were the last 2 to 3 minutes of the run while
  # the other lanes had ended (2026-11-30, 833 s: lanes sdk 522 s, store
  # 432 s, go 718 s).
  (echo "== fuzz targets, a few seconds each"; FUZZWORKERS=1 scripts/fuzz.sh) >"$lanes/fuzz.log" 2>&1 &
  fuzz=$!
  store_part rest -test.skip "$store_topology|$store_players" -test.bench . || rc=1
  wait "$topology" || rc=1
  wait "$players" || rc=1
  cat "$lanes/store-topology.log" "$lanes/store-players.log"
  wait "$fuzz" || rc=1
  cat "$lanes/fuzz.log"
  # The C# SDK's tests (about 80 s, mostly waiting on realsyncd) run in
  # this lane, which ends first: in the SDK lane, before the TypeScript
  # SDK's, they made it the last to end (748 s against 584 s here,
  # 2026-12-05)
  echo "== C# SDK (Unity): .NET Standard 2.1 build with Mono, tests against realsyncd (installs mono when missing)"
  "sdk/csharp/Tests~/run.sh" || rc=1
  elapsed
  # The deploy linters too (3 minutes of a loaded CI, half a minute
  # alone): before the TypeScript SDK's tests, they made the SDK lane the
  # last to end, 130 s after this one (2026-12-07: 710 s against 583 s)
  echo "== deploy/: Dockerfile, compose file, HAProxy, Prometheus alerts, Grafana dashboard, Kubernetes manifests"
  deploy/lint.sh || rc=1
  elapsed
  return "$rc"
}

go_tests() {
  echo "== tests of the other packages (race detector, real Redis: standalone, 3-master Cluster, embedded)"
  # Four packages at a time, not GOMAXPROCS (2 here): the suites mostly
  # wait (on Redis failovers, leases, timers, realsyncd processes). The
  # longest are named first (go test builds and runs packages in the order
  # given, and prints their results in that order): cmd/realsyncd, api and
  # store/tickets take about 450 s each on a loaded CI, and the fourth
  # slot builds and runs the rest meanwhile, in go list's order. With
  # three at a time the three held every slot, and the rest (about 50
  # packages to build, link and run) came after them: the lane's last
  # 290 s of a 809 s run; with four, 646 s of 708 s (2026-12-05). The
  # longer of the rest named after the three took longer (810 s):
  # store/webhooks, 112 s at the end of the lane, took 424 s beside the
  # three, its tests waiting on walks and expiries that a loaded machine
  # slows (and four at a time on 2026-11-27, with every suite sharing the
  # machine alike, took 887 s against 775 s). Each runs its benchmarks once too, after its tests, as the store lane
  # does (a go test run of their own linked every test binary a second
  # time: 110 s at the end of the lane). Asked for after -args, not with
  # go test's -bench, which runs the packages one at a time (so that
  # benchmarks do not share the machine): go test shows their lines only
  # when the package fails.
  # shellcheck disable=SC2046 # one word per package
  go test -race -count=1 -timeout 20m -p 4 ./cmd/realsyncd/ ./api/ ./store/tickets/ \
    $(go list ./... | grep -vx 'github.com/realsync/realsync/store') -args -test.bench=. -test.benchtime=1x
}
sdk_tests() {
  # scripts/bench.sh's smoke run waits most of its 3 to 5 minutes (streams
  # left idle to be read, realsyncd restarted on an empty Redis): it runs
  # beside the rest of this lane, not after it (after it, this lane was the
  # last to end, by 120 s); in a process group of its own, stopped as one
  # if the lane ends first (bench.sh's trap then stops what it started).
  # The deploy linters and the C# SDK's tests beside the TypeScript SDK's
  # made the lane longer (695 → 772 s, 2026-12-05): the browser tests
  # took 738 s instead of 477 s. Both run in the store lane, after its
  # tests.
  set -m
  bench_smoke >"$lanes/bench-smoke.out" 2>&1 &
  bench_smoke_pid=$!
  set +m
  trap 'kill -TERM -- "-$bench_smoke_pid" 2>/dev/null || true' EXIT
  echo "== TypeScript SDK: generated types and the demo's bundle match, Node and browser tests"
  (cd sdk/typescript && npm ci --no-audit --no-fund --loglevel=error && npm run --silent generate && npm run --silent bundle)
  if [ -n "$(git status --porcelain -- sdk/typescript/src/schema.ts web/static/realsync.js)" ]; then
    git --no-pager diff --stat -- sdk/typescript/src/schema.ts web/static/realsync.js
    echo "the SDK's generated types or the demo bundle drifted: run 'npm run generate && npm run bundle' in sdk/typescript and commit" >&2
    return 1
  fi
  # realsyncd built once for every test file (one at a time: two at a
  # time took as long here, the machine's two cores busy, though half as
  # long alone)
  scripts/build-realsyncd.sh sdk/typescript/.bin/realsyncd
  (cd sdk/typescript && REALSYNC_BIN="$PWD/.bin/realsyncd" npm test --silent)
  elapsed
  echo "== TypeScript SDK as published: npm publish --dry-run, the packed tarball in a strict consumer (Node and browser)"
  sdk/typescript/scripts/consumer-test.sh
  elapsed
  echo "== scripts/bench.sh as a smoke run (every section at its smallest, once, placed on CPUs), scripts/capacity.py and scripts/targets.py on its log"
  local rc=0
  wait "$bench_smoke_pid" || rc=$?
  trap - EXIT
  cat "$lanes/bench-smoke.out"
  elapsed
  return "$rc"
}
# bench_smoke runs scripts/bench.sh's every section at its smallest
# (REALSYNC_BENCH_SMOKE), placed as issue 15's acceptance run is (Redis,
# the servers and the load on CPUs given: here Redis on the first, the rest
# on the second), then scripts/capacity.py and scripts/targets.py on its
# log: nothing else runs the load tool's scenarios, the Cluster section or
# the placement between full runs, which a change could break unseen
# until the next full run stopped. Built as the checks built (static_build), so that it reuses
# their compiled packages. Its figures mean nothing; its log is shown when
# it fails.
bench_smoke() {
  local log="$lanes/bench-smoke.log" place=()
  [ "$(nproc)" -lt 2 ] || place=(REALSYNC_BENCH_REDIS_CPUS=0 REALSYNC_BENCH_SERVER_CPUS=1 REALSYNC_BENCH_LOAD_CPUS=1)
  if ! static_build env "${place[@]}" REALSYNC_BENCH_SMOKE=1 scripts/bench.sh >"$log" 2>&1; then
    tail -n 80 "$log"
    echo "scripts/bench.sh failed in a smoke run (REALSYNC_BENCH_SMOKE=1; the end of its output above)" >&2
    return 1
  fi
  # what went wrong first: a run whose requests all failed has no figures
  # for the scripts below to read
  local bad
  bad="$(smoke_went_wrong "$log")"
  if [ -n "$bad" ]; then
    echo "$bad"
    echo "scripts/bench.sh's smoke run: the runs above went wrong (errors answered, events not delivered, streams reconnected)" >&2
    return 1
  fi
  local py sec
  for py in capacity targets; do
    if ! python3 "scripts/$py.py" "$log" >"$lanes/$py-smoke.out" 2>&1; then
      cat "$lanes/$py-smoke.out"
      # the section it names, as the log has it
      sec="$(grep -o '"== [^"]*"' "$lanes/$py-smoke.out" | head -n 1 | tr -d '"')"
      [ -z "$sec" ] || awk -v s="$sec" '$0 == s { p = 1; print; next } /^== / { p = 0 } p' "$log"
      echo "scripts/$py.py failed on a smoke run's log of scripts/bench.sh" >&2
      return 1
    fi
  done
  echo "ok   scripts/bench.sh: $(grep -c '^== ' "$log") measurements in a smoke run, none went wrong; scripts/capacity.py and scripts/targets.py read its log"
}
# smoke_went_wrong LOG: the lines of a bench.sh log that say a run went
# wrong, one a line with its section: an error answered (rsload's errors
# column, a failed patch, a ticket's error), an event not delivered, a
# stream reconnected. A full run has none either (docs/bench/*-all.log).
smoke_went_wrong() {
  python3 - "$1" <<'PY'
import re, sys
title = ""
for n, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    if line.startswith("== "):
        title = line[3:].strip()
        continue
    if (re.search(r"map\[[^\]]", line)
            or re.search(r"\b[1-9]\d* (failed|errors|reconnects|stream reconnects)\b", line)
            or any(a != b for a, b in re.findall(r"\b(\d+) of (\d+) (?:expected|patch events delivered)", line))):
        print(f"{n}: {title}: {line.rstrip()}")
PY
}

lane store store_tests
lane go go_tests
lane sdk sdk_tests live
await sdk
await go
await store
if [ -n "$failed" ]; then
  echo "failed:$failed" >&2
  exit 1
fi
