# shellcheck shell=bash
# Sourced by scripts/test.sh and scripts/fuzz.sh: puts temporary files in
# memory (TMPDIR=/dev/shm) when TMPDIR is unset and /dev/shm can take them:
# writable, executable (go test runs the binaries it builds there) and with
# 2 GiB free (a container's default /dev/shm is 64 MiB and noexec: then the
# disk is kept). The fuzz targets' workers share inputs through a file
# there, which a 4 s run had the kernel write out to disk at 161 MiB (none
# on /dev/shm); on a slow disk that writeback stalls every process that
# writes, the Redis test servers (their logs, a Cluster's fsynced
# nodes.conf) and test binaries too.
tmpfs_usable() {
  [ -d /dev/shm ] && [ -w /dev/shm ] || return 1
  local f rc=0
  f=$(mktemp /dev/shm/realsync-exec-XXXXXX) || return 1
  printf '#!/bin/sh\nexit 0\n' >"$f" && chmod +x "$f" && "$f" 2>/dev/null || rc=1
  rm -f "$f"
  [ "$rc" -eq 0 ] && [ "$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')" -ge $((2 * 1024 * 1024)) ]
}
if [ -z "${TMPDIR:-}" ] && tmpfs_usable; then export TMPDIR=/dev/shm; fi
