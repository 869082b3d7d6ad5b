#!/usr/bin/env bash
# Builds the C# SDK with Mono's mcs (C# 7.2 language level: what Unity
# compiles too), proves it uses only .NET Standard 2.1 types, builds
# realsyncd, starts a redis-server on a free loopback port, and runs the
# C# tests against the real server (they start, kill and restart realsyncd
# themselves). Installs Mono (Debian/Ubuntu apt-get) when mcs is missing.
# Every process it starts is stopped on exit.
# usage: sdk/csharp/Tests~/run.sh [test-name-filter]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
sdk="$(dirname "$here")"
root="$(cd "$sdk/../.." && pwd)"

if ! command -v mcs >/dev/null 2>&1 || [ ! -f /usr/lib/mono/4.5/Facades/netstandard.dll ]; then
  echo "== installing mono (mono-mcs, mono-devel)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mono-mcs mono-devel >/dev/null
fi

tmp="$(mktemp -d)"
redis_pid=""
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  if [ -f "$tmp/pids" ]; then
    while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done <"$tmp/pids"
  fi
  if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

M=/usr/lib/mono/4.5
NS="$M/Facades/netstandard.dll"
CECIL="$(find /usr/lib/mono/gac/Mono.Cecil -path '*/0.11.*/Mono.Cecil.dll' | head -1)"

echo "== C# SDK: Unity .meta files"
"$here/meta.sh"

echo "== C# SDK: compile (mcs, C# 7.2, warnings are errors)"
mcs -langversion:7.2 -target:library -noconfig -nostdlib -warnaserror -debug- \
  -r:"$M/mscorlib.dll" -r:"$M/System.dll" -r:"$M/System.Core.dll" -r:"$M/System.Net.Http.dll" -r:"$NS" \
  -doc:"$tmp/RealSync.xml" -out:"$tmp/RealSync.dll" "$sdk"/Runtime/*.cs

echo "== C# SDK: only .NET Standard 2.1 types"
mcs -out:"$tmp/ProfileCheck.exe" -r:"$CECIL" -r:System.Core.dll "$here/ProfileCheck.cs"
cp "$CECIL" "$tmp/"
mono "$tmp/ProfileCheck.exe" "$NS" "$tmp/RealSync.dll"

echo "== C# SDK: tests against realsyncd"
# docs/GUIDE.md's TicTacToe class, as written, played by GuideTest.cs.
awk '/^```csharp file=TicTacToe.cs$/{f=1;next} f&&/^```$/{exit} f' "$root/docs/GUIDE.md" >"$tmp/TicTacToe.cs"
[ -s "$tmp/TicTacToe.cs" ] || { echo "no csharp file=TicTacToe.cs block in docs/GUIDE.md" >&2; exit 1; }
mcs -langversion:7.2 -warnaserror -r:"$tmp/RealSync.dll" -r:System.Net.Http.dll -out:"$tmp/tests.exe" \
  "$here/Harness.cs" "$here/Tests.cs" "$here/GuideTest.cs" "$tmp/TicTacToe.cs"
(cd "$root" && go build -o "$tmp/realsyncd" ./cmd/realsyncd)

port=""
for _ in $(seq 1 50); do
  p=$((20000 + RANDOM % 30000))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port="$p"; break; fi
done
[ -n "$port" ] || { echo "no free port for redis-server" >&2; exit 1; }
mkdir -p "$tmp/redis"
redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp/redis" --save "" --appendonly no \
  --protected-mode no --logfile "$tmp/redis/redis.log" &
redis_pid=$!
for _ in $(seq 1 100); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.05
done

status=0
REALSYNC_BIN="$tmp/realsyncd" REDIS_URL="redis://127.0.0.1:$port" REALSYNC_PIDFILE="$tmp/pids" \
  REALSYNC_LOG="$tmp/realsyncd.log" mono --debug "$tmp/tests.exe" "$@" || status=$?
if [ "$status" -ne 0 ]; then
  echo "--- realsyncd log (last 40 lines)"
  tail -n 40 "$tmp/realsyncd.log" || true
fi
exit "$status"
