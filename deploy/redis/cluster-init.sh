#!/bin/sh
# Creates the Redis Cluster of the compose file once: 3 masters, 3 replicas.
# Idempotent: does nothing when the first node already knows other nodes.
#
# CLUSTER MEET (used by redis-cli --cluster create) takes IP addresses, not
# host names, so the nodes' names are resolved here first; the nodes
# announce their names to clients themselves (cluster-announce-hostname).
#
# Usage: cluster-init.sh host:port host:port ... (6 nodes)
set -eu

first=$1
first_host=${first%:*}
first_port=${first##*:}

for node in "$@"; do
  host=${node%:*}
  port=${node##*:}
  i=0
  until redis-cli -h "$host" -p "$port" ping >/dev/null 2>&1; do
    i=$((i + 1))
    if [ "$i" -ge 60 ]; then
      echo "cluster-init: $node does not answer PING" >&2
      exit 1
    fi
    sleep 1
  done
done

known=$(redis-cli -h "$first_host" -p "$first_port" cluster info | tr -d '\r' |
  sed -n 's/^cluster_known_nodes://p')
if [ "${known:-1}" -gt 1 ]; then
  echo "cluster-init: the cluster already exists ($known nodes known); nothing to do"
  redis-cli -h "$first_host" -p "$first_port" cluster info | grep -E '^cluster_(state|size)'
  exit 0
fi

addrs=""
for node in "$@"; do
  host=${node%:*}
  port=${node##*:}
  ip=$(getent hosts "$host" | awk '{ print $1; exit }')
  if [ -z "$ip" ]; then
    echo "cluster-init: cannot resolve $host" >&2
    exit 1
  fi
  addrs="$addrs $ip:$port"
done

echo "cluster-init: creating the cluster on$addrs"
# shellcheck disable=SC2086 # one argument per address
redis-cli --cluster create $addrs --cluster-replicas 1 --cluster-yes

i=0
until redis-cli -h "$first_host" -p "$first_port" cluster info | grep -q '^cluster_state:ok'; do
  i=$((i + 1))
  if [ "$i" -ge 30 ]; then
    echo "cluster-init: the cluster did not reach cluster_state:ok" >&2
    exit 1
  fi
  sleep 1
done
echo "cluster-init: cluster_state:ok"
