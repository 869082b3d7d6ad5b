#!/usr/bin/env bash
# Runs every measurement of docs/BENCHMARKS.md in one go, on this machine,
# in about 30 minutes on 2 cores: the machine's limits (minimal Go handler, its SSE
# fan-out, redis-benchmark on the join and patch scripts) and RealSync's
# figures side by side. Everything listens on loopback and is stopped on
# exit. Needs redis-server and redis-benchmark (scripts/test.sh installs
# them). Usage: scripts/bench.sh [section...]; sections: http browse ceiling batch
# sse h2 lobby go redistime capacity stripes security match (default: all). Keep the
# whole output: docs/BENCHMARKS.md cites one run's log, committed verbatim
# in docs/bench/ (its "Run:" line names it and the commit).
set -euo pipefail
cd "$(dirname "$0")/.."

# Where each part runs (issue 15's acceptance: Redis, the servers and the
# load on cores of their own): REALSYNC_BENCH_REDIS_CPUS,
# REALSYNC_BENCH_SERVER_CPUS and REALSYNC_BENCH_LOAD_CPUS, each a list of
# CPUs and ranges as taskset -c takes them (e.g. 0-2, 3-10, 11-15), each
# optional. This script and all it runs that serves nothing (rsload's
# load, redis-cli, the Go benchmarks and the redis-benchmark they drive)
# run on the load CPUs; realsyncd and rsload's minimal servers (the
# minimal handler, the anchor, the SSE baseline) on the server CPUs; the
# standalone redis-server, and the one each Go benchmark starts for itself
# (internal/redistest), on the Redis CPUs; a Cluster's master i on the
# i-th of the Redis CPUs (round robin: one hot mode's masters on cores of
# their own). Unset, everything shares the machine.
redis_cpus=${REALSYNC_BENCH_REDIS_CPUS:-}
server_cpus=${REALSYNC_BENCH_SERVER_CPUS:-}
load_cpus=${REALSYNC_BENCH_LOAD_CPUS:-}
for cpus in "$redis_cpus" "$server_cpus" "$load_cpus"; do
  [ -z "$cpus" ] || taskset -c "$cpus" true || { echo "bench.sh: no such CPU list: $cpus" >&2; exit 2; }
done
cores=$(nproc) # before this script is placed: the CPUs it may use
[ -z "$load_cpus" ] || taskset -pc "$load_cpus" $$ >/dev/null
# "${redis_on[@]}" cmd …, "${server_on[@]}" cmd …: cmd on those CPUs (a
# background command's $! stays its own pid: taskset execs it).
redis_on=(); [ -z "$redis_cpus" ] || redis_on=(taskset -c "$redis_cpus")
server_on=(); [ -z "$server_cpus" ] || server_on=(taskset -c "$server_cpus")
# cpu_list LIST: LIST's CPUs, one a line (taskset's list syntax: CPUs,
# ranges, ranges with a stride).
cpu_list() {
  python3 -c 'import sys
for part in sys.argv[1].split(","):
    span, _, step = part.partition(":")
    first, _, last = span.partition("-")
    for c in range(int(first), int(last or first) + 1, int(step or 1)): print(c)' "$1"
}
# master_cpu I: the I-th CPU of REALSYNC_BENCH_REDIS_CPUS, round robin.
master_cpu() {
  [ -n "$redis_cpus" ] || return 0
  local cpus
  mapfile -t cpus < <(cpu_list "$redis_cpus")
  [ ${#cpus[@]} -gt 0 ] || { echo "bench.sh: no CPU in $redis_cpus" >&2; return 1; }
  echo "${cpus[$(($1 % ${#cpus[@]}))]}"
}

sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(http browse ceiling batch sse h2 lobby go redistime capacity stripes security match)
want() { [[ " ${sections[*]} " == *" $1 "* ]]; }

# REALSYNC_BENCH_SMOKE=1: a smoke run, every section at its smallest and
# once (one round, runs of 1 s, at most 4 clients, 32 streams: 8 a client,
# as rooms.MaxStreamsPerPlayer allows, 500 rooms seeded, 1 000 tickets,
# each Go benchmark once with -short): whether the script still runs from
# end to end with today's tools, and gives scripts/capacity.py what it
# reads; not a measurement. scripts/test.sh runs one, placed as an
# acceptance run is; its figures mean nothing, and its log says so on its
# first line (TestBenchmarksCiteOneRun refuses to cite such a log).
smoke=""; [ "${REALSYNC_BENCH_SMOKE:-}" != 1 ] || smoke=1
# rounds N...: the rounds to run: all of them, the first in a smoke run.
rounds() { if [ -n "$smoke" ]; then echo "$1"; else echo "$@"; fi; }
# run CMD ARG...: runs CMD; in a smoke run with its sizes cut first (for
# rsload and go test alike: of a flag given twice, the second counts; the
# log's "$ " line shows the command as written). A go test runs its
# package's test binary, built once for the run (gotest).
run() {
  local a=()
  while [ $# -gt 0 ]; do
    [ -n "$smoke" ] || { a+=("$@"); break; }
    case "$1" in
      -duration | -rss-settle | -streams | -seed | -tickets | -clients | -benchtime)
        [ $# -ge 2 ] || { echo "bench.sh: $1 without a value" >&2; return 2; } ;;
    esac
    case "$1" in
      -duration | -rss-settle) a+=("$1" 1s); shift 2 ;;
      -streams) a+=("$1" "$(($2 < 32 ? $2 : 32))"); shift 2 ;;
      -seed) a+=("$1" "$(($2 < 500 ? $2 : 500))"); shift 2 ;;
      -tickets) a+=("$1" 1000); shift 2 ;;
      -clients) a+=("$1" "$(($2 < 4 ? $2 : 4))"); shift 2 ;;
      -benchtime) a+=("$1" 1x -short); shift 2 ;;
      *) a+=("$1"); shift ;;
    esac
  done
  local i
  for ((i = 0; i + 2 < ${#a[@]}; i++)); do
    if [ "${a[i]}" = go ] && [ "${a[i + 1]}" = test ]; then
      gotest "${a[@]:0:i}" -- "${a[@]:i+2}"
      return
    fi
  done
  "${a[@]}"
}
# gotest [PREFIX...] -- PKG ARG...: go test PKG ARG... (PREFIX: env
# settings), as the package's test binary, built once for the run (each
# go test linked it anew: a smoke run's 14 links of the store's test
# binary were most of its CPU), run in the package's folder with go
# test's flags as the binary's -test. flags, and go test's timeout.
gotest() {
  local prefix=()
  while [ "$1" != -- ]; do prefix+=("$1"); shift; done
  shift
  local pkg="$1" bin conv=(-test.timeout=10m) f
  shift
  bin="$tmp/$(tr / _ <<<"$pkg").test"
  [ -x "$bin" ] || go test -c -o "$bin" "$pkg" || return
  for f in "$@"; do
    case "$f" in -run | -bench | -benchtime | -count | -timeout | -v | -short) f="-test.${f#-}" ;; esac
    conv+=("$f")
  done
  (cd "$pkg" && "${prefix[@]}" "$bin" "${conv[@]}")
}

# What the run was: the commit, the time, the machine and its load, so a
# log stands on its own as the evidence docs/BENCHMARKS.md points to.
[ -z "$smoke" ] || echo "# smoke run (REALSYNC_BENCH_SMOKE): every section cut to its smallest, once (the commands below as written, run cut); no figure here is a measurement"
echo "# scripts/bench.sh ${sections[*]}"
echo "# commit $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' with uncommitted changes'), started $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "# $cores cores of $(nproc --all), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(go version), $(redis-server --version | awk '{ print $1, $2, $3 }'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# CPUs: Redis ${redis_cpus:-shared}, servers ${server_cpus:-shared}, load ${load_cpus:-shared} (REALSYNC_BENCH_REDIS_CPUS, _SERVER_CPUS, _LOAD_CPUS)"

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -z "${redis_port:-}" ] || redis-cli -p "$redis_port" shutdown nosave >/dev/null 2>&1 || true
  for p in ${cluster_ports:-}; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
ended() { [ "$BASHPID" != "$$" ] || printf '\n# ended %s, load average %s\n' "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" "$(cut -d' ' -f1-3 /proc/loadavg)"; }
trap 'cleanup; ended' EXIT

go build -o "$tmp/realsyncd" ./cmd/realsyncd
go build -o "$tmp/rsload" ./cmd/rsload

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# stop_pid PID: ends a process this script started and forgets it, so
# that the cleanup never signals its pid once the system gave it to
# another process.
stop_pid() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  local keep=() p
  for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  pids=("${keep[@]}")
}
# await SECONDS COMMAND...: runs COMMAND every 0.1 s until it succeeds, for
# at most SECONDS (what a quiet machine takes is no bound: CI runs this
# beside its other lanes); fails otherwise.
await() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}
# ours PORT PIDFILE: the redis-server answering on PORT is the one whose
# pid PIDFILE holds, not another process that took the port between
# free_port and the bind (the test lanes beside this run start their own:
# flushing or shutting down theirs would break them).
ours() {
  local pid
  pid=$(cat "$2" 2>/dev/null) && [ -n "$pid" ] &&
    redis-cli -p "$1" info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$pid"
}
# start_redis PICK DIR COMMAND...: runs COMMAND (a redis-server and its
# settings, placed) daemonized in DIR on a port PICK prints, until one is
# its own (ours), 5 ports at most; sets started_port.
start_redis() {
  local pick=$1 dir=$2 p try
  shift 2
  for try in 1 2 3 4 5; do
    p=$($pick)
    rm -f "$dir/redis.pid"
    (cd "$dir" && "$@" --port "$p" --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >/dev/null) || true
    if await 15 ours "$p" "$dir/redis.pid"; then started_port=$p; return 0; fi
    echo "redis-server on port $p did not start (try $try of 5):" >&2
    tail -3 "$dir/redis.log" >&2 || true
    [ ! -s "$dir/redis.pid" ] || kill "$(cat "$dir/redis.pid")" 2>/dev/null || true
  done
  return 1
}
start_redis free_port "$tmp" "${redis_on[@]}" redis-server --bind 127.0.0.1 --save "" --appendonly no || exit 1
redis_port=$started_port
minimal=127.0.0.1:$(free_port)
"${server_on[@]}" "$tmp/rsload" -serve-minimal "$minimal" 2>/dev/null &
minimal_pid=$!
pids+=("$minimal_pid")
await 30 curl -sf "http://$minimal/healthz" || { echo "rsload -serve-minimal did not start" >&2; exit 1; }

rsd_pid=""
# start_rsd restarts realsyncd on an empty Redis, with the settings given
# (VAR=value ...) on top of the bench's; sets rsd and rsd_pid.
# Rate limits are off: one load generator on one address is the flood they
# refuse; their own cost is measured apart (docs/BENCHMARKS.md, "Security
# costs"). Room quotas are off too: -seed creates thousands of rooms as one
# user.
start_rsd() {
  [ -z "$rsd_pid" ] || stop_pid "$rsd_pid"
  redis-cli -p "$redis_port" flushall >/dev/null
  local port; port=$(free_port)
  REALSYNC_ADDR=127.0.0.1:$port REALSYNC_REDIS_URL=redis://127.0.0.1:$redis_port \
    REALSYNC_JWT_SECRET=bench REALSYNC_LOG_LEVEL=warn REALSYNC_RATE_LIMITS=off REALSYNC_MAX_ROOMS_OWNED=0 REALSYNC_MAX_ROOMS_JOINED=0 \
    env "$@" "${server_on[@]}" "$tmp/realsyncd" 2>>"$tmp/realsyncd.log" &
  rsd_pid=$!
  pids+=("$rsd_pid")
  rsd=http://127.0.0.1:$port
  await 30 curl -sf "$rsd/readyz" && return
  echo "realsyncd did not start" >&2; cat "$tmp/realsyncd.log" >&2; exit 1
}
say() { printf '\n== %s\n$ %s\n' "$1" "${*:2}"; run "${@:2}"; }
ops() { run "$tmp/rsload" -scenario ops -clients 64 -rooms 10 -duration 8s "$@"; }

if want http; then
  start_rsd
  say "minimal Go handler (the machine's HTTP limit with this load tool)" ops -urls "http://$minimal" -mix healthz=1
  say "realsyncd GET /healthz (router, middlewares, no Redis)" ops -urls "$rsd" -mix healthz=1
  say "join + leave churn" ops -urls "$rsd" -mix join=1
  say "state patches" ops -urls "$rsd" -mix patch=1
  say "the default mix" ops -urls "$rsd"
  start_rsd
  # 512 streams: 8 for each of the 64 players in its pool room, the most a
  # player may hold in one room (rooms.MaxStreamsPerPlayer); 2 000 (31 a
  # player) were refused and retried without end (docs/bench/2026-11-24.log)
  say "the default mix with 512 streams of its players open" ops -urls "$rsd" -streams 512
  # Server CPU per request (issue 15 item 4): each server's utime+stime from
  # /proc over the run divided by the requests it answered, 3 alternating
  # rounds of 4 s; the list pages hold 20 rooms (80 pool rooms, 20 per region).
  # The anchor (one EVALSHA per request) is the floor of a request that
  # needs Redis; -redis adds Redis' own CPU per request.
  cpu_anchor=127.0.0.1:$(free_port)
  "${server_on[@]}" "$tmp/rsload" -serve-minimal "$cpu_anchor" -redis "redis://127.0.0.1:$redis_port" 2>/dev/null &
  cpu_anchor_pid=$!
  pids+=("$cpu_anchor_pid")
  start_rsd
  for round in $(rounds 1 2 3); do
    say "server CPU, round $round: minimal handler" ops -duration 4s -urls "http://$minimal" -mix get=1 -cpu-pid "$minimal_pid"
    say "server CPU, round $round: anchor" ops -duration 4s -urls "http://$cpu_anchor" -mix anchor=1 -cpu-pid "$cpu_anchor_pid" -redis "redis://127.0.0.1:$redis_port"
    say "server CPU, round $round: GET room" ops -duration 4s -urls "$rsd" -mix get=1 -cpu-pid "$rsd_pid" -redis "redis://127.0.0.1:$redis_port"
    say "server CPU, round $round: list page of 20" ops -duration 4s -urls "$rsd" -rooms 80 -mix list=1 -cpu-pid "$rsd_pid" -redis "redis://127.0.0.1:$redis_port"
    say "server CPU, round $round: join + leave" ops -duration 4s -urls "$rsd" -mix join=1 -cpu-pid "$rsd_pid" -redis "redis://127.0.0.1:$redis_port"
  done
fi

# The browsing cache (REALSYNC_BROWSE_CACHE_TTL): list pages of 20 (4
# distinct pages, one per region, asked by 64 clients) without it and with
# it at 1s, alternating with the minimal handler, 3 rounds of 4 s; the
# server's and Redis' CPU per request.
if want browse; then
  for round in $(rounds 1 2 3); do
    start_rsd
    say "browse, round $round: minimal handler" ops -duration 4s -urls "http://$minimal" -mix get=1 -cpu-pid "$minimal_pid"
    say "browse, round $round: list page of 20" ops -duration 4s -urls "$rsd" -rooms 80 -mix list=1 -cpu-pid "$rsd_pid" -redis "redis://127.0.0.1:$redis_port"
    start_rsd REALSYNC_BROWSE_CACHE_TTL=1s
    say "browse, round $round: list page of 20, cached (REALSYNC_BROWSE_CACHE_TTL=1s)" ops -duration 4s -urls "$rsd" -rooms 80 -mix list=1 -cpu-pid "$rsd_pid" -redis "redis://127.0.0.1:$redis_port"
  done
fi

if want ceiling; then
  say "redis-benchmark: EVALSHA of the join and state patch scripts, 64 clients, -P 1" \
    go test ./store -run '^$' -bench RedisCeiling -benchtime 1x
  # Placed, whether Redis' CPUs are its own: its time per join script
  # (redis-µs/script) again with a busy loop on each load CPU. On a machine
  # whose CPUs share a core's resources it grows (the 2-vCPU machine of
  # docs/BENCHMARKS.md: by a quarter to two thirds, PERFORMANCE-HISTORY.md,
  # "The two vCPUs are not independent"), and every comparison of Redis
  # beside realsyncd with Redis beside redis-benchmark leans by as much.
  if [ -n "$redis_cpus" ] && [ -n "$load_cpus" ]; then
    busy=()
    for c in $(cpu_list "$load_cpus"); do
      taskset -c "$c" bash -c 'while :; do :; done' &
      busy+=($!)
      pids+=($!)
    done
    say "redis-benchmark: EVALSHA of the join script, a busy loop on each load CPU" \
      go test ./store -run '^$' -bench RedisCeiling/join -benchtime 1x
    kill "${busy[@]}"
    wait "${busy[@]}" 2>/dev/null || true
  fi
fi

# Batching script runs per Redis node (issue 15, item 2): three alternated
# rounds of each comparison. redis_cpu is Redis' CPU time so far (s).
redis_cpu() { redis-cli -p "$redis_port" info cpu | tr -d '\r' | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.3f", s }'; }
if want batch; then
  for round in $(rounds 1 2 3); do
    say "batching, round $round: join-shaped scripts from 64 callers (off, natural, 200us window) and redis-benchmark -P 1 / -P 16 of the same EVALSHA" \
      env REALSYNC_BENCH_ROUND="$round" go test ./store -run '^$' -bench Batching -benchtime 20000x -count 1
  done
  for round in $(rounds 1 2 3); do
    for window in off 0; do
      REALSYNC_REDIS_BATCH_WINDOW=$window start_rsd
      before=$(redis_cpu)
      say "join + leave churn, REALSYNC_REDIS_BATCH_WINDOW=$window, round $round" ops -urls "$rsd" -mix join=1 -duration 4s
      echo "Redis CPU during the run: $(awk -v a="$before" -v b="$(redis_cpu)" 'BEGIN { printf "%.3f", b - a }') s"
    done
  done
fi

# SSE: the baseline is a minimal server whose events come through the same
# Redis' Pub/Sub (-redis), as realsyncd's do. Then the fan-out's server CPU
# per event delivered (issue 15 item 6), baseline and realsyncd alternating.
if want sse; then
  fan_srv=127.0.0.1:$(free_port)
  "${server_on[@]}" "$tmp/rsload" -serve-minimal "$fan_srv" -redis "redis://127.0.0.1:$redis_port" 2>/dev/null &
  fan_pid=$!
  pids+=("$fan_pid")
  await 30 curl -sf "http://$fan_srv/healthz" || { echo "rsload -serve-minimal did not start" >&2; exit 1; }
  for round in $(rounds 1 2 3); do
    say "SSE baseline: CPU per event, 2 000 streams, 100 publishes/s (round $round)" \
      "$tmp/rsload" -scenario fanout -urls "http://$fan_srv" -streams 2000 -rooms 20 -rate 100 -duration 8s -rss-pid "$fan_pid"
    start_rsd
    say "realsyncd: CPU per event, 2 000 streams, 100 patches/s (round $round)" \
      "$tmp/rsload" -urls "$rsd" -streams 2000 -rooms 20 -rate 100 -duration 8s -rss-pid "$rsd_pid"
  done
  # 10 000 streams at 200/s: three alternating rounds, as at 2 000 (one
  # pair's ratio moved between 74% and 99% on a 2-core machine:
  # docs/PERFORMANCE-HISTORY.md, "The 10 000-stream fan-out, taken
  # apart"); then 1 000/s once
  for round in $(rounds 1 2 3) 1000; do
    rate=200 title=" (round $round)"
    [ "$round" != 1000 ] || rate=1000 title=""
    say "SSE baseline: minimal fan-out, 10 000 streams, $rate publishes/s$title" \
      "$tmp/rsload" -scenario fanout -urls "http://$fan_srv" -streams 10000 -rooms 100 -rate "$rate" -duration 10s -rss-pid "$fan_pid"
    start_rsd
    # in round 1 also the RSS once the runtime gave back what the opening
    # burst used (an idle server's forced GC comes within 2 minutes)
    settle=(); [ "$round" != 1 ] || settle=(-rss-settle 150s)
    say "realsyncd: 10 000 streams on one instance, $rate patches/s$title" \
      "$tmp/rsload" -urls "$rsd" -streams 10000 -rooms 100 -rate "$rate" -duration 10s -rss-pid "$rsd_pid" "${settle[@]}"
  done
  # its pattern subscription would go on costing Redis a match a publish
  stop_pid "$fan_pid"
fi

# Event streams over HTTP/2 (issue 15 item 6): realsyncd with REALSYNC_H2C
# and rsload -h2c (streams multiplexed, up to 250 a connection) against
# HTTP/1.1 (a connection a stream) and against the minimal fan-out over
# h2c (net/http's HTTP/2 server without RealSync, fed by the same Redis'
# Pub/Sub: what HTTP/2 itself costs here; and x/net's with the random
# write scheduler, as realsyncd's), alternating, 2 000 streams at 100
# patches/s; then 10 000 streams over h2c at 200 patches/s.
if want h2; then
  h2_base=127.0.0.1:$(free_port)
  "${server_on[@]}" "$tmp/rsload" -serve-minimal "$h2_base" -h2c -redis "redis://127.0.0.1:$redis_port" 2>/dev/null &
  h2_base_pid=$!
  pids+=("$h2_base_pid")
  await 30 curl -sf "http://$h2_base/healthz" || { echo "rsload -serve-minimal -h2c did not start" >&2; exit 1; }
  # the same minimal fan-out served by x/net's HTTP/2 server with the
  # random write scheduler, realsyncd's (cmd/realsyncd/tls.go)
  h2_rand=127.0.0.1:$(free_port)
  "${server_on[@]}" "$tmp/rsload" -serve-minimal "$h2_rand" -h2c -h2-random -redis "redis://127.0.0.1:$redis_port" 2>/dev/null &
  h2_rand_pid=$!
  pids+=("$h2_rand_pid")
  await 30 curl -sf "http://$h2_rand/healthz" || { echo "rsload -serve-minimal -h2c -h2-random did not start" >&2; exit 1; }
  for round in $(rounds 1 2 3); do
    start_rsd
    say "HTTP/1.1: 2 000 streams, 100 patches/s (round $round)" \
      "$tmp/rsload" -urls "$rsd" -streams 2000 -rooms 20 -rate 100 -duration 8s -rss-pid "$rsd_pid"
    say "h2c baseline: CPU per event, 2 000 streams, 100 publishes/s (round $round)" \
      "$tmp/rsload" -h2c -scenario fanout -urls "http://$h2_base" -streams 2000 -rooms 20 -rate 100 -duration 8s -rss-pid "$h2_base_pid"
    say "h2c baseline, random write scheduler: CPU per event, 2 000 streams, 100 publishes/s (round $round)" \
      "$tmp/rsload" -h2c -scenario fanout -urls "http://$h2_rand" -streams 2000 -rooms 20 -rate 100 -duration 8s -rss-pid "$h2_rand_pid"
    REALSYNC_H2C=true start_rsd
    say "h2c: 2 000 streams, 100 patches/s (round $round)" \
      "$tmp/rsload" -h2c -urls "$rsd" -streams 2000 -rooms 20 -rate 100 -duration 8s -rss-pid "$rsd_pid"
  done
  stop_pid "$h2_base_pid"
  stop_pid "$h2_rand_pid"
  REALSYNC_H2C=true start_rsd
  # also the RSS once the runtime gave back what the opening burst used,
  # as the sse section's HTTP/1.1 row at 200 patches/s
  say "h2c: 10 000 streams on one instance, 200 patches/s" \
    "$tmp/rsload" -h2c -urls "$rsd" -streams 10000 -rooms 100 -rate 200 -duration 10s -rss-pid "$rsd_pid" -rss-settle 150s
fi

if want lobby; then
  start_rsd
  lobby() { run "$tmp/rsload" -scenario ops -urls "$rsd" -rooms 4 -duration 10s "$@"; }
  say "lobby of 1 000 rooms: seed" lobby -seed 1000 -clients 2 -mix healthz=1 -duration 1s
  say "lobby of 1 000 rooms: list + quick-join, 2 clients" lobby -clients 2 -mix list=1,quickjoin=1
  say "lobby of 1 000 rooms: list + quick-join, 16 clients" lobby -clients 16 -mix list=1,quickjoin=1
  say "lobby of 100 000 rooms: seed 99 000 more" lobby -seed 99000 -clients 2 -mix healthz=1 -duration 1s
  say "lobby of 100 000 rooms: list + quick-join, 2 clients" lobby -clients 2 -mix list=1,quickjoin=1
  say "lobby of 100 000 rooms: list + quick-join, 16 clients" lobby -clients 16 -mix list=1,quickjoin=1
fi

if want go; then
  export REALSYNC_TEST_REDIS_URL=redis://127.0.0.1:$redis_port
  redis-cli -p "$redis_port" flushall >/dev/null
  say "HTTP paths through the real router (in process)" go test ./api -run '^$' -bench HTTP -benchtime 3s
  say "every script through its Go wrapper" go test ./store -run '^$' -bench Scripts -benchtime 2s
  say "Redis memory per idle 8-player room" go test ./store -run '^$' -bench RoomMemory -benchtime 1x
  say "lobby at 1k / 10k / 100k rooms, store level" go test ./store -run '^$' -bench LobbyScale -benchtime 2000x -timeout 30m
fi

# Redis time per mutation (issue 15 items 1 and 5): Redis' own CPU and
# command time per request (rsload -redis reads INFO cpu and commandstats
# around each run), one kind of request per run, alternating with the
# anchor (one EVALSHA of internal/anchor's join-shaped script per request,
# served by a second minimal server that has Redis) twice; then per script,
# one call at a time (BenchmarkRedisTime); then quick-join at 256 clients
# into one mode and region.
if want redistime; then
  anchor_srv=127.0.0.1:$(free_port)
  "${server_on[@]}" "$tmp/rsload" -serve-minimal "$anchor_srv" -redis "redis://127.0.0.1:$redis_port" 2>/dev/null &
  pids+=($!)
  start_rsd
  rt() { run "$tmp/rsload" -scenario ops -clients 64 -rooms 10 -duration 5s -redis "redis://127.0.0.1:$redis_port" "$@"; }
  for round in $(rounds 1 2); do
    say "anchor: one EVALSHA of the join-shaped script per request (round $round)" rt -urls "http://$anchor_srv" -mix anchor=1
    say "join + leave churn, Redis' figures (round $round)" rt -urls "$rsd" -mix join=1
    say "state patches, Redis' figures (round $round)" rt -urls "$rsd" -mix patch=1
  done
  say "script runs and their Redis calls (SLOWLOG sample)" rt -urls "$rsd" -mix join=1,patch=1 -redis-sample
  say "Redis time per script, one at a time, against the anchor" \
    env REALSYNC_TEST_REDIS_URL=redis://127.0.0.1:$redis_port go test ./store -run '^$' -bench RedisTime -benchtime 20x
  start_rsd
  say "quick-join + leave, 256 clients into one mode and region" rt -urls "$rsd" -clients 256 -mix quickjoin=1 -duration 8s
fi

# The inputs of docs/CAPACITY.md (scripts/capacity.py): per kind of request
# alone, realsyncd's CPU (-cpu-pid) and Redis' CPU (-redis) per request,
# with realsyncd's defaults (batching, the Functions library) but rate
# limits and quotas off; then the anchor and the minimal handler alike.
if want capacity; then
  anchor_srv=127.0.0.1:$(free_port)
  "${server_on[@]}" "$tmp/rsload" -serve-minimal "$anchor_srv" -redis "redis://127.0.0.1:$redis_port" 2>/dev/null &
  anchor_pid=$!
  pids+=("$anchor_pid")
  start_rsd
  cap() { run "$tmp/rsload" -scenario ops -clients 32 -rooms 10 -duration 5s -redis "redis://127.0.0.1:$redis_port" "$@"; }
  for mix in healthz=1 get=1 list=1 join=1 patch=1 create=1; do
    say "capacity input: $mix" cap -urls "$rsd" -mix "$mix" -cpu-pid "$rsd_pid"
  done
  say "capacity input: the minimal handler" cap -urls "http://$minimal" -mix healthz=1 -cpu-pid "$minimal_pid"
  say "capacity input: the anchor" cap -urls "http://$anchor_srv" -mix anchor=1 -cpu-pid "$anchor_pid"
fi

# A hot (mode, region) over K stripes (issue 15 item 3): a 3-master Cluster
# (slots split in 3 equal ranges, as redis-cli --cluster create does),
# realsyncd with REALSYNC_MODE_STRIPES=1,quick=K, quick-join + leave churn
# into mode "quick", region r0, each master's CPU share from its own INFO
# (-redis-cluster); K=1 and K=3 alternated, 2 rounds of 4 s. The joined
# rooms quota is on, as by default (20; owned rooms unlimited for the
# seeding), so each quick-join also reserves in the user's holdings;
# it reads the user's membership on every stripe (the user indexes).
if want stripes; then
  cluster_ports=""
  masters=""
  # a Cluster node's bus listens 10000 above its port: both free, ≤ 55535
  cluster_port() { python3 -c '
import random, socket
while True:
    p = random.randint(20000, 45000)
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p); break
    except OSError: pass'; }
  for i in 0 1 2; do
    mkdir -p "$tmp/cluster$i"
    cpu=$(master_cpu "$i")
    master_on=(); [ -z "$cpu" ] || master_on=(taskset -c "$cpu")
    start_redis cluster_port "$tmp/cluster$i" "${master_on[@]}" redis-server --bind 127.0.0.1 --save "" --appendonly no \
      --cluster-enabled yes --cluster-config-file nodes.conf || exit 1
    p=$started_port
    cluster_ports="$cluster_ports $p"
    masters="$masters${masters:+,}127.0.0.1:$p"
  done
  set -- $cluster_ports
  i=0
  for p in $cluster_ports; do
    # a config epoch of its own, as redis-cli --cluster create sets (and
    # internal/redistest): left at 0, the nodes settle their collisions by
    # gossip after cluster_state:ok
    redis-cli -p "$p" cluster set-config-epoch $((i + 1)) >/dev/null
    redis-cli -p "$p" cluster addslotsrange $((i * 16384 / 3)) $(((i + 1) * 16384 / 3 - 1)) >/dev/null
    [ "$p" = "$1" ] || redis-cli -p "$p" cluster meet 127.0.0.1 "$1" >/dev/null
    i=$((i + 1))
  done
  cluster_ok() { for p in $cluster_ports; do redis-cli -p "$p" cluster info | grep -q cluster_state:ok || return 1; done; }
  await 60 cluster_ok || { echo "the Cluster did not reach cluster_state:ok" >&2; exit 1; }
  start_cluster_rsd() { # $1: K of mode quick
    [ -z "$rsd_pid" ] || stop_pid "$rsd_pid"
    for p in $cluster_ports; do redis-cli -p "$p" flushall >/dev/null; done
    local port; port=$(free_port)
    REALSYNC_ADDR=127.0.0.1:$port REALSYNC_REDIS_CLUSTER_ADDRS=$masters REALSYNC_MODE_STRIPES=1,quick=$1 \
      REALSYNC_JWT_SECRET=bench REALSYNC_LOG_LEVEL=warn REALSYNC_RATE_LIMITS=off REALSYNC_MAX_ROOMS_OWNED=0 "${server_on[@]}" "$tmp/realsyncd" 2>>"$tmp/realsyncd.log" &
    rsd_pid=$!
    pids+=("$rsd_pid")
    rsd=http://127.0.0.1:$port
    await 30 curl -sf "$rsd/readyz" && return
    echo "realsyncd did not start" >&2; cat "$tmp/realsyncd.log" >&2; exit 1
  }
  for round in $(rounds 1 2); do
    for k in 1 3; do
      start_cluster_rsd "$k"
      say "quick-join + leave into one mode and region, 3-master Cluster, K=$k, round $round" \
        "$tmp/rsload" -scenario ops -clients 64 -rooms 10 -duration 4s -urls "$rsd" -mix quickjoin=1 -redis-cluster "$masters"
    done
  done
  say "packing: concurrent quick-joins into one (mode, region), K=1 (exact) and K=3 (bound)" \
    go test ./store -count 1 -run 'TestQuickJoinPacksConcurrentCallers|TestStripesQuickJoinPacking' -v
fi

# What the protections cost (docs/BENCHMARKS.md, "Security costs"): the
# rate limiter's Redis time per check, the whole handler with limits off
# and on, strict decoding, quotas, stream-lease renewal rounds and the
# holdings release. The rate limiter's and the renewal round's Redis time
# are inputs of docs/CAPACITY.md (scripts/capacity.py reads them here).
if want security; then
  export REALSYNC_TEST_REDIS_URL=redis://127.0.0.1:$redis_port
  redis-cli -p "$redis_port" flushall >/dev/null
  say "security costs: the rate limiter's check" go test ./store/ratelimit -run '^$' -bench RateLimit -benchtime 2s
  say "security costs: the handler with limits off and on, strict decoding" go test ./api -run '^$' -bench 'HTTPRateLimit|Decode' -benchtime 2s
  say "security costs: create + join + 2 leaves, quotas off and on" go test ./store -run '^$' -bench CreateJoin -benchtime 2000x
  say "security costs: lease renewal rounds, holdings release" go test ./store -run '^$' -bench 'RenewalRound|Unheld' -benchtime 1x
fi

# Matchmaking (issue 17 item 7): 100 000 tickets queued over HTTP as fast as
# 64 clients go, then at 2 000 and 3 000 per second, over 4 modes of 2 teams of 2 and 2 regions, 20% parties of
# 2, ratings N(1500, 300), the default window (±100, +100 every 5 s, up to
# ±1000); then every ticket read back: matched per second, time to match by
# rating band, rating spread per match, team sizes (rsload's match scenario).
# With production's party consent: each member joins its leader's party first.
if want match; then
  cat > "$tmp/rules.yaml" <<'RULES'
modes:
  mm0: {teams: 2, teamSize: 2}
  mm1: {teams: 2, teamSize: 2}
  mm2: {teams: 2, teamSize: 2}
  mm3: {teams: 2, teamSize: 2}
RULES
  export REALSYNC_MATCHMAKING_FILE=$tmp/rules.yaml
  # production's party consent: each party member joins its leader's
  # party before the leader's create, as a client accepting an invite does
  export REALSYNC_PARTY_CONSENT=party
  start_rsd
  say "matchmaking: the machine's HTTP limit beside it (minimal Go handler)" ops -urls "http://$minimal" -mix healthz=1
  mm() { run "$tmp/rsload" -scenario match -urls "$rsd" -tickets 100000 -modes 4 -regions 2 -party 20 -party-consent party -team-size 2 -clients 64 -duration 5m "$@"; }
  say "matchmaking: 100 000 tickets at once, 4 modes of 2 teams of 2, 2 regions, 20% parties of 2" mm
  for rate in 2000 3000; do
    start_rsd
    say "matchmaking: 100 000 tickets at $rate per second, 4 modes of 2 teams of 2, 2 regions, 20% parties of 2" mm -ticket-rate "$rate"
  done
  unset REALSYNC_MATCHMAKING_FILE REALSYNC_PARTY_CONSENT
fi
