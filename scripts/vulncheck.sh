#!/usr/bin/env bash
# govulncheck (pinned in go.mod as a go tool) over the whole module: fails
# when the code calls a known-vulnerable function.
#
# Its database is vuln.go.dev when that answers. Machines that reach only
# the Go module proxy, Debian and npm (this project's CI) cannot reach it;
# they use the snapshot committed in scripts/vulndb/osv (the entries of
# golang/vulndb that affect the standard library, the toolchain and the
# modules of this build graph; see scripts/vulndb/SNAPSHOT for its commit and
# date). The snapshot is refused, failing the check, when it leaves out a
# module of the build graph that has entries in the database (a new
# dependency with known vulnerabilities) or when it is older than
# VULNDB_MAX_AGE_DAYS (default 180): refresh it with
# scripts/vulndb/refresh.py <golang/vulndb checkout>.
set -euo pipefail
cd "$(dirname "$0")/.."

if curl -sf --max-time 10 -o /dev/null https://vuln.go.dev/index/db.json.gz 2>/dev/null; then
  echo "govulncheck: database https://vuln.go.dev"
  exec go tool govulncheck ./...
fi

snap=scripts/vulndb
date=$(sed -n 's/^date //p' "$snap/SNAPSHOT")
age=$(( ( $(date +%s) - $(date -d "$date" +%s) ) / 86400 ))
max=${VULNDB_MAX_AGE_DAYS:-180}
echo "govulncheck: vuln.go.dev unreachable; database: the committed snapshot of golang/vulndb $(sed -n 's/^commit //p' "$snap/SNAPSHOT" | cut -c1-12) of $date ($age days old; $(sed -n 's/^entries //p' "$snap/SNAPSHOT") entries)"
if [ "$age" -gt "$max" ]; then
  echo "the vulnerability database snapshot is $age days old (over $max): refresh it with scripts/vulndb/refresh.py" >&2
  exit 1
fi
# A module the snapshot was not taken for is fine when the database has no
# entry for it at all; else its entries are missing.
missing=$(comm -23 <(go list -m -f '{{.Path}}' all | sort -u) <(sort -u "$snap/modules.txt") | comm -12 - <(sort -u "$snap/affected-modules.txt"))
if [ -n "$missing" ]; then
  echo "the vulnerability database snapshot leaves out the entries of these modules of the build graph (refresh it with scripts/vulndb/refresh.py):" >&2
  echo "$missing" >&2
  exit 1
fi
exec go tool govulncheck -db "file://$PWD/$snap/osv" ./...
