#!/usr/bin/env bash
# Runs every measurement of docs/BENCHMARKS.md in one go, on this machine,
# in about 15 minutes: the machine's limits (minimal Go handler, its SSE
# fan-out, redis-benchmark on the join and patch scripts) and RealSync's
# figures side by side. Everything listens on loopback and is stopped on
# exit. Needs redis-server and redis-benchmark (scripts/test.sh installs
# them). Usage: scripts/bench.sh [section...]; sections: http ceiling sse
# lobby go (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."

sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(http ceiling sse lobby go)
want() { [[ " ${sections[*]} " == *" $1 "* ]]; }

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -z "${redis_port:-}" ] || redis-cli -p "$redis_port" shutdown nosave >/dev/null 2>&1 || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/realsyncd" ./cmd/realsyncd
go build -o "$tmp/rsload" ./cmd/rsload

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
  --pidfile "$tmp/redis.pid" --logfile "$tmp/redis.log" >/dev/null
minimal=127.0.0.1:$(free_port)
"$tmp/rsload" -serve-minimal "$minimal" 2>/dev/null &
pids+=($!)

rsd_pid=""
# start_rsd restarts realsyncd on an empty Redis; sets rsd and rsd_pid.
# Rate limits are off: one load generator on one address is the flood they
# refuse; their own cost is measured apart (docs/BENCHMARKS.md, "Security
# costs").
start_rsd() {
  [ -z "$rsd_pid" ] || { kill "$rsd_pid"; wait "$rsd_pid" 2>/dev/null || true; }
  redis-cli -p "$redis_port" flushall >/dev/null
  local port; port=$(free_port)
  REALSYNC_ADDR=127.0.0.1:$port REALSYNC_REDIS_URL=redis://127.0.0.1:$redis_port \
    REALSYNC_JWT_SECRET=bench REALSYNC_LOG_LEVEL=warn REALSYNC_RATE_LIMITS=off "$tmp/realsyncd" 2>>"$tmp/realsyncd.log" &
  rsd_pid=$!
  pids+=("$rsd_pid")
  rsd=http://127.0.0.1:$port
  for _ in $(seq 50); do curl -sf "$rsd/readyz" >/dev/null && return; sleep 0.1; done
  echo "realsyncd did not start" >&2; cat "$tmp/realsyncd.log" >&2; exit 1
}
say() { printf '\n== %s\n$ %s\n' "$1" "${*:2}"; "${@:2}"; }
ops() { "$tmp/rsload" -scenario ops -clients 64 -rooms 10 -duration 8s "$@"; }

if want http; then
  start_rsd
  say "minimal Go handler (the machine's HTTP limit with this load tool)" ops -urls "http://$minimal" -mix healthz=1
  say "realsyncd GET /healthz (router, middlewares, no Redis)" ops -urls "$rsd" -mix healthz=1
  say "join + leave churn" ops -urls "$rsd" -mix join=1
  say "state patches" ops -urls "$rsd" -mix patch=1
  say "the default mix" ops -urls "$rsd"
  start_rsd
  say "the default mix with 2 000 streams of its players open" ops -urls "$rsd" -streams 2000
fi

if want ceiling; then
  say "redis-benchmark: EVALSHA of the join and state patch scripts, 64 clients, -P 1" \
    go test ./store -run '^$' -bench RedisCeiling -benchtime 1x
fi

if want sse; then
  for rate in 200 1000; do
    say "SSE baseline: minimal fan-out, 10 000 streams, $rate publishes/s" \
      "$tmp/rsload" -scenario fanout -urls "http://$minimal" -streams 10000 -rooms 100 -rate "$rate" -duration 10s
    start_rsd
    # at 200/s also the RSS once the runtime gave back what the opening
    # burst used (an idle server's forced GC comes within 2 minutes)
    settle=(); [ "$rate" != 200 ] || settle=(-rss-settle 150s)
    say "realsyncd: 10 000 streams on one instance, $rate patches/s" \
      "$tmp/rsload" -urls "$rsd" -streams 10000 -rooms 100 -rate "$rate" -duration 10s -rss-pid "$rsd_pid" "${settle[@]}"
  done
fi

if want lobby; then
  start_rsd
  lobby() { "$tmp/rsload" -scenario ops -urls "$rsd" -rooms 4 -duration 10s "$@"; }
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
