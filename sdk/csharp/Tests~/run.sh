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

echo "== C# SDK: build RealSync.dll (build.sh: mcs, C# 7.2, warnings are errors)"
"$sdk/build.sh" "$tmp" >/dev/null

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
"$root/scripts/build-realsyncd.sh" "$tmp/realsyncd"

# free_port prints a loopback port nothing listens on, below the kernel's
# ephemeral range (32768 and up by default), where the ports the Go tests'
# servers bind (port 0) and every outgoing connection's come from: a port
# from there could be taken between this check and the server's bind.
free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 12000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  echo "no free loopback port" >&2
  return 1
}
port="$(free_port)"
mkdir -p "$tmp/redis"
redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp/redis" --save "" --appendonly no \
  --protected-mode no --logfile "$tmp/redis/redis.log" &
redis_pid=$!
for _ in $(seq 1 100); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.05
done

echo "== C# SDK: a console program compiled against RealSync.dll alone, run against realsyncd"
mkdir -p "$tmp/consumer"
cp "$tmp/RealSync.dll" "$tmp/consumer/"
(cd "$tmp/consumer" && mcs -langversion:7.2 -warnaserror -r:RealSync.dll -out:Program.exe "$here/Consumer/Program.cs")
cport="$(free_port)"
REALSYNC_ADDR="127.0.0.1:$cport" REALSYNC_REDIS_URL="redis://127.0.0.1:$port" REALSYNC_RATE_LIMITS=off REALSYNC_LOG_LEVEL=debug \
  REALSYNC_JWT_SECRET="csharp-consumer-secret-0123456789abcdef" "$tmp/realsyncd" >"$tmp/consumer/realsyncd.log" 2>&1 &
consumer_pid=$!
echo "$consumer_pid" >>"$tmp/pids"
for _ in $(seq 1 200); do
  curl -sf "http://127.0.0.1:$cport/readyz" >/dev/null 2>&1 && break
  sleep 0.05
done
if ! (cd "$tmp/consumer" && mono Program.exe "http://127.0.0.1:$cport"); then
  echo "--- realsyncd log (last 40 lines)"
  tail -n 40 "$tmp/consumer/realsyncd.log" || true
  exit 1
fi
# run_console DIR: runs DIR's Program.exe against realsyncd, its output
# (stderr too) in DIR/out.txt; on a failure prints that output, the exit
# status and the time taken, the server's connections and the end of its
# log. A program still running after 30 s gets SIGQUIT (Mono writes every
# thread's stack to the output), then SIGKILL 10 s later: a hang shows
# where it waits.
run_console() {
  local t0 rc=0
  t0=$(date +%s)
  (cd "$1" && timeout -s QUIT -k 10 30 mono Program.exe "http://127.0.0.1:$cport" >out.txt 2>&1) || rc=$?
  if [ "$rc" -ne 0 ]; then
    cat "$1/out.txt"
    echo "exit status $rc after $(( $(date +%s) - t0 )) s (137: still running 30 s on, its threads above)"
    echo "--- realsyncd's connections"
    ss -tn "( sport = :$cport or dport = :$cport )" || true
    echo "--- realsyncd log (last 40 lines)"
    tail -n 40 "$tmp/consumer/realsyncd.log" || true
  fi
  return "$rc"
}
# the README's console program, as written (its first csharp block under "Use from a console program")
mkdir -p "$tmp/readme-console"
cp "$tmp/RealSync.dll" "$tmp/readme-console/"
awk '/^## Use from a console program/{s=1} s&&/^```csharp/{f=1;next} f&&/^```/{exit} f' "$sdk/README.md" >"$tmp/readme-console/Program.cs"
[ -s "$tmp/readme-console/Program.cs" ] || { echo "no csharp block under 'Use from a console program' in sdk/csharp/README.md" >&2; exit 1; }
(cd "$tmp/readme-console" && mcs -langversion:7.2 -warnaserror -r:RealSync.dll -out:Program.exe Program.cs)
if ! run_console "$tmp/readme-console"; then
  echo "the README's console program failed" >&2; exit 1
fi
if ! grep -q '^bob joined$' "$tmp/readme-console/out.txt" ||
  ! grep -q '^2 players, state {"player_2_ready":true}$' "$tmp/readme-console/out.txt"; then
  cat "$tmp/readme-console/out.txt"; echo "the README's console program printed something else" >&2; exit 1
fi
cat "$tmp/readme-console/out.txt"
# the README's REST and live room blocks (their first csharp blocks), one after
# the other in a method, run against realsyncd with Unity's Debug.Log on the console
mkdir -p "$tmp/readme-rest"
cp "$tmp/RealSync.dll" "$tmp/readme-rest/"
{
  printf '%s\n' 'using System; using System.Collections.Generic; using System.Threading.Tasks; using RealSync;' \
    'static class Debug { public static void Log(object message) { Console.WriteLine(message); } }' \
    'static class Program { static void Main(string[] args) { Run(args[0]).GetAwaiter().GetResult(); Environment.Exit(0); }' \
    'static async Task Run(string url) {'
  awk '/^## REST/{s=1} s&&/^```csharp/{f=1;next} f&&/^```/{exit} f' "$sdk/README.md" | sed 's#"http://localhost:8080"#url#'
  awk '/^## Live rooms and lobbies/{s=1} s&&/^```csharp/{f=1;next} f&&/^```/{exit} f' "$sdk/README.md"
  printf '%s\n' 'Console.WriteLine(live.Players.Count + " player, state " + Json.Write(live.State));' 'await live.CloseAsync(); } }'
} >"$tmp/readme-rest/Program.cs"
grep -q 'CreateRoomAsync' "$tmp/readme-rest/Program.cs" && grep -q 'client.Live(' "$tmp/readme-rest/Program.cs" ||
  { echo "no csharp blocks under 'REST' and 'Live rooms and lobbies' in sdk/csharp/README.md" >&2; exit 1; }
(cd "$tmp/readme-rest" && mcs -langversion:7.2 -warnaserror -r:RealSync.dll -r:System.Net.Http.dll -out:Program.exe Program.cs)
if ! run_console "$tmp/readme-rest"; then
  echo "the README's REST and live room blocks failed" >&2; exit 1
fi
if ! grep -q '^404 ROOM_NOT_FOUND$' "$tmp/readme-rest/out.txt" ||
  ! grep -q '^1 player, state {"score":10}$' "$tmp/readme-rest/out.txt"; then
  cat "$tmp/readme-rest/out.txt"; echo "the README's REST and live room blocks printed something else" >&2; exit 1
fi
cat "$tmp/readme-rest/out.txt"
# the README's Unity sample (its csharp block under "Unity sample"), compiled
# against RealSync.dll and stubs of the few UnityEngine types it uses
mkdir -p "$tmp/readme-unity"
awk '/^## Unity sample/{s=1} s&&/^```csharp/{f=1;next} f&&/^```/{exit} f' "$sdk/README.md" >"$tmp/readme-unity/QuickMatch.cs"
[ -s "$tmp/readme-unity/QuickMatch.cs" ] || { echo "no csharp block under 'Unity sample' in sdk/csharp/README.md" >&2; exit 1; }
# and docs/GUIDE.md's TicTacToeBoard (the MonoBehaviour around TicTacToe.cs)
awk '/^And a `MonoBehaviour` that shows it/{s=1} s&&/^```csharp/{f=1;next} f&&/^```/{exit} f' "$root/docs/GUIDE.md" >"$tmp/readme-unity/TicTacToeBoard.cs"
[ -s "$tmp/readme-unity/TicTacToeBoard.cs" ] || { echo "no csharp block after 'And a MonoBehaviour that shows it' in docs/GUIDE.md" >&2; exit 1; }
printf '%s\n' 'namespace UnityEngine { public class Object { } public class Component : Object { public T GetComponentInChildren<T>() { return default(T); } }' \
  '  public class MonoBehaviour : Component { }' \
  '  public static class Debug { public static void Log(object message) { } }' \
  '  public static class PlayerPrefs { public static string GetString(string key, string defaultValue) { return defaultValue; } public static void SetString(string key, string value) { } } }' \
  'namespace UnityEngine.Events { public class UnityEvent { public void AddListener(System.Action a) { } } }' \
  'namespace UnityEngine.UI { public class Text : UnityEngine.Component { public string text; }' \
  '  public class InputField : UnityEngine.Component { public string text; }' \
  '  public class Button : UnityEngine.Component { public bool interactable; public UnityEngine.Events.UnityEvent onClick = new UnityEngine.Events.UnityEvent(); } }' \
  >"$tmp/readme-unity/UnityStubs.cs"
mcs -langversion:7.2 -warnaserror -target:library -r:"$tmp/RealSync.dll" -r:System.Net.Http.dll -out:"$tmp/readme-unity/QuickMatch.dll" \
  "$tmp/readme-unity/QuickMatch.cs" "$tmp/readme-unity/UnityStubs.cs"
mcs -langversion:7.2 -warnaserror -target:library -r:"$tmp/RealSync.dll" -r:System.Net.Http.dll -out:"$tmp/readme-unity/TicTacToeBoard.dll" \
  "$tmp/readme-unity/TicTacToeBoard.cs" "$tmp/TicTacToe.cs" "$tmp/readme-unity/UnityStubs.cs"
# the README's personal stream and matchmaking ticket snippets (their first csharp blocks), one after the other in a method
{
  printf '%s\n' 'using System; using System.Collections.Generic; using System.Threading.Tasks; using RealSync; using UnityEngine;' \
    'class Snippets { async Task Run(RealSyncClient client) {'
  awk '/^## The personal stream/{s=1} s&&/^```csharp/{f=1;next} f&&/^```/{exit} f' "$sdk/README.md"
  awk '/^### Matchmaking tickets/{s=1} s&&/^```csharp/{f=1;next} f&&/^```/{exit} f' "$sdk/README.md"
  echo '} }'
} >"$tmp/readme-unity/Snippets.cs"
grep -q 'client.Me(' "$tmp/readme-unity/Snippets.cs" && grep -q 'CreateTicketAsync' "$tmp/readme-unity/Snippets.cs" ||
  { echo "no csharp blocks under 'The personal stream' and 'Matchmaking tickets' in sdk/csharp/README.md" >&2; exit 1; }
mcs -langversion:7.2 -warnaserror -target:library -r:"$tmp/RealSync.dll" -r:System.Net.Http.dll -out:"$tmp/readme-unity/Snippets.dll" \
  "$tmp/readme-unity/Snippets.cs" "$tmp/readme-unity/UnityStubs.cs"
echo "the README's Unity sample, personal stream and ticket snippets and the guide's TicTacToeBoard compile"
kill "$consumer_pid" 2>/dev/null || true
wait "$consumer_pid" 2>/dev/null || true

status=0
REALSYNC_BIN="$tmp/realsyncd" REDIS_URL="redis://127.0.0.1:$port" REALSYNC_PIDFILE="$tmp/pids" \
  REALSYNC_LOG="$tmp/realsyncd.log" mono --debug "$tmp/tests.exe" "$@" || status=$?
if [ "$status" -ne 0 ]; then
  echo "--- realsyncd log (last 40 lines)"
  tail -n 40 "$tmp/realsyncd.log" || true
fi
exit "$status"
