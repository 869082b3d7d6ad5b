#!/usr/bin/env bash
# Builds the C# SDK into one assembly a program references: RealSync.dll
# (and RealSync.xml, its documentation for IDEs) with Mono's mcs, at the C#
# 7.2 language level Unity compiles, warnings as errors, against Mono's
# 4.5 profile and its netstandard.dll facade.
# usage: sdk/csharp/build.sh [output-dir]   (default: sdk/csharp/Build~,
# a folder Unity ignores, so the package never holds the sources twice)
# then:  mcs -r:<output-dir>/RealSync.dll Program.cs && mono Program.exe
# With the .NET SDK instead: dotnet pack sdk/csharp/RealSync.csproj -c Release
set -euo pipefail
sdk="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$sdk/Build~}"
M=/usr/lib/mono/4.5
NS="$M/Facades/netstandard.dll"
if ! command -v mcs >/dev/null 2>&1 || [ ! -f "$NS" ]; then
  echo "build.sh: needs Mono's mcs and netstandard facade (apt-get install mono-mcs mono-devel)" >&2
  exit 1
fi
mkdir -p "$out"
mcs -langversion:7.2 -target:library -noconfig -nostdlib -warnaserror -debug- \
  -r:"$M/mscorlib.dll" -r:"$M/System.dll" -r:"$M/System.Core.dll" -r:"$M/System.Net.Http.dll" -r:"$NS" \
  -doc:"$out/RealSync.xml" -out:"$out/RealSync.dll" "$sdk"/Runtime/*.cs
echo "$out/RealSync.dll"
