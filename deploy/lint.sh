#!/usr/bin/env bash
# Validates deploy/ with everything that runs without a Docker engine or a
# Kubernetes cluster, and installs the tools it needs when they are missing
# (apt-get: yamllint shellcheck haproxy prometheus redis-server; npm:
# deploy/lint/package-lock.json; Go modules: deploy/lint/*/go.mod):
#
#   shell scripts       shellcheck
#   YAML files          yamllint (deploy/.yamllint.yaml)
#   Dockerfile          dockerfile-utils lint; the final stage is distroless or
#                       scratch with a numeric non-root USER; the build command
#                       run on the context the .dockerignore leaves gives a
#                       static (CGO_ENABLED=0) binary
#   compose.yaml        dclint: the Compose specification's JSON schema and
#                       its rules (deploy/lint/dclint.yaml); then loaded by
#                       compose-go, the loader of `docker compose config`
#                       (deploy/lint/composeconfig), and checked against the
#                       files it names (lint/check_compose.py)
#   haproxy.cfg         haproxy -c
#   Prometheus          promtool check config; promtool test rules (the alert
#                       unit tests of prometheus/alerts_test.yml)
#   Grafana dashboard   JSON, layout, every query parsed by promtool, every
#                       metric and label known (deploy/lint/check_queries.py)
#   Kubernetes          kubectl kustomize, then lint/k8svalidate: each object
#                       decoded strictly into its Kubernetes 1.30 API type
#                       (k8s.io/api: unknown apiVersion, kind or field, wrong
#                       types), required fields, unique list keys, metadata,
#                       selectors; errors planted in a copy must each fail;
#                       then grace period, probes, resources, selectors,
#                       /v1/admin closed at the Ingress (lint/check_k8s.py,
#                       which must refuse it open)
#   the stack, small    on loopback: 6 redis-server nodes from
#                       redis/redis.conf joined by redis/cluster-init.sh, two
#                       realsyncd on that Cluster, haproxy.cfg in front (with
#                       3 s timeouts and a 1 s heartbeat): a room's event
#                       stream through the proxy outlives the timeouts, gets
#                       its events unbuffered; /metrics and /v1/admin/ (on,
#                       answering on an instance's port) are refused; the
#                       proxy's access log holds the path, not the token
#
# Not run here (no engine, no cluster): docker build, docker compose up, a
# kubectl apply. docs/OPERATIONS.md, "What is validated", says so.
set -euo pipefail
cd "$(dirname "$0")"
deploy=$(pwd)
root=$(cd .. && pwd)

SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
updated=""
need_apt() { # command package
  command -v "$1" >/dev/null 2>&1 && return 0
  echo "== deploy: installing $2"
  [ -n "$updated" ] || { $SUDO apt-get update -qq; updated=1; }
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$2" >/dev/null
  # Some packages start a system service; nothing here needs one.
  $SUDO service "$2" stop >/dev/null 2>&1 || true
}
need_apt yamllint yamllint
need_apt shellcheck shellcheck
need_apt haproxy haproxy
need_apt promtool prometheus
need_apt redis-server redis-server

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

step() { echo "== deploy: $*"; }

step "npm tools (deploy/lint)"
(cd lint && timeout 300 npm ci --no-audit --no-fund --loglevel=error >/dev/null)

step "shellcheck"
shellcheck lint.sh redis/cluster-init.sh

step "yamllint"
yamllint --strict -c .yamllint.yaml .

step "Dockerfile"
lint/node_modules/.bin/dockerfile-utils lint Dockerfile
final_from=$(grep -E '^FROM ' Dockerfile | tail -1)
case "$final_from" in
  "FROM gcr.io/distroless/static"*|"FROM scratch"*) ;;
  *) echo "Dockerfile: the final stage must be distroless/static or scratch: $final_from" >&2; exit 1 ;;
esac
final_user=$(grep -E '^USER ' Dockerfile | tail -1 | awk '{print $2}')
if ! [[ "$final_user" =~ ^[1-9][0-9]*(:[1-9][0-9]*)?$ ]]; then
  echo "Dockerfile: the final USER must be a numeric non-root uid[:gid], not '$final_user'" >&2; exit 1
fi
build_cmd='go build -trimpath -ldflags="-s -w" -o /out/realsyncd ./cmd/realsyncd'
if ! grep -qF "$build_cmd" Dockerfile || ! grep -qF 'CGO_ENABLED=0' Dockerfile; then
  echo "Dockerfile: its build command changed; update the context build check in deploy/lint.sh" >&2; exit 1
fi
# The tests build the image's binary as the Dockerfile does, and compile the
# module for vet and generate with its CGO_ENABLED and -trimpath (one
# compile shared; test.sh's every build is -trimpath): a change of the
# Dockerfile's flags goes to both.
if ! grep -qF "CGO_ENABLED=0 exec ${build_cmd%% -o *} " "$root/scripts/build-realsyncd.sh" ||
  ! grep -qE '^static_build\(\) \{ CGO_ENABLED=0 ' "$root/scripts/test.sh" ||
  ! grep -qE '^GOFLAGS="[^"]* -trimpath[ "]' "$root/scripts/test.sh" ||
  ! grep -qx 'export GOFLAGS' "$root/scripts/test.sh"; then
  echo "Dockerfile: scripts/build-realsyncd.sh, or scripts/test.sh's static_build or exported GOFLAGS (-trimpath), no longer builds as it does" >&2; exit 1
fi
# The build context as BuildKit would send it: the repository's files less
# what Dockerfile.dockerignore excludes. Then the Dockerfile's build command.
(cd "$root" && git ls-files -co --exclude-standard) | python3 -c '
import fnmatch, os, shutil, sys
pats = [l.strip() for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")]
def excluded(path):
    parts = path.split("/")
    return any(fnmatch.fnmatch("/".join(parts[:i]), p) for p in pats for i in range(1, len(parts) + 1))
for f in sys.stdin.read().split("\n"):
    if f and not excluded(f) and os.path.isfile(os.path.join(sys.argv[2], f)):
        dst = os.path.join(sys.argv[3], f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(sys.argv[2], f), dst)
' Dockerfile.dockerignore "$root" "$tmp/context"
(cd "$tmp/context" && CGO_ENABLED=0 timeout 600 go build -trimpath -ldflags="-s -w" -o "$tmp/realsyncd" ./cmd/realsyncd)
go version -m "$tmp/realsyncd" | grep -q 'CGO_ENABLED=0' || { echo "Dockerfile: the binary is not static" >&2; exit 1; }
echo "context of $(find "$tmp/context" -type f | wc -l) files builds a static binary"

step "compose.yaml (dclint)"
lint/node_modules/.bin/dclint -c lint/dclint.yaml compose.yaml

step "compose.yaml as Docker Compose resolves it (compose-go, as docker compose config)"
(cd lint/composeconfig && timeout 600 go build -o "$tmp/composeconfig" .)
if env -u REALSYNC_JWT_SECRET "$tmp/composeconfig" compose.yaml >/dev/null 2>&1; then
  echo "compose.yaml must refuse to start without REALSYNC_JWT_SECRET" >&2; exit 1
fi
REALSYNC_JWT_SECRET=lint "$tmp/composeconfig" compose.yaml > "$tmp/compose.json"
python3 lint/check_compose.py "$tmp/compose.json" haproxy/haproxy.cfg prometheus/prometheus.yml
# without REALSYNC_SHUTDOWN_TIMEOUT the check compares with realsyncd's
# default (30 s): a grace period of 25 s must be refused
jq '(.services[] | select(.image | test("realsyncd"))) |= (del(.environment.REALSYNC_SHUTDOWN_TIMEOUT) | .stop_grace_period = "25s")' \
  "$tmp/compose.json" > "$tmp/compose-short-grace.json"
if out=$(python3 lint/check_compose.py "$tmp/compose-short-grace.json" haproxy/haproxy.cfg prometheus/prometheus.yml 2>&1) ||
  ! grep -q "REALSYNC_SHUTDOWN_TIMEOUT (30s)" <<<"$out"; then
  echo "check_compose.py passed a stop_grace_period below realsyncd's default REALSYNC_SHUTDOWN_TIMEOUT: $out" >&2; exit 1
fi

step "haproxy -c"
haproxy -c -q -f haproxy/haproxy.cfg

step "Prometheus: config and alert unit tests"
promtool check config prometheus/prometheus.yml
promtool test rules prometheus/alerts_test.yml

step "Grafana dashboard"
python3 lint/check_queries.py grafana/realsync.json prometheus/alerts.yml lint/metrics.txt "$tmp/dashboard-rules.json"
promtool check rules "$tmp/dashboard-rules.json"

step "Kubernetes manifests (k8svalidate: the Kubernetes 1.30 API types)"
if command -v kubectl >/dev/null 2>&1; then
  kubectl kustomize k8s > "$tmp/k8s.yaml"
else
  (cd "$tmp" && timeout 600 go run sigs.k8s.io/kustomize/kustomize/v5@v5.5.0 build "$deploy/k8s") > "$tmp/k8s.yaml"
fi
(cd lint/k8svalidate && timeout 600 go build -o "$tmp/k8svalidate" .)
timeout 60 "$tmp/k8svalidate" "$tmp/k8s.yaml" k8s/secret.example.yaml
# Self-test: each error planted in a copy of the rendered manifests is refused,
# for that error.
planted=0
plant() { # what sed-script expected-message
  sed -e "$2" "$tmp/k8s.yaml" > "$tmp/planted.yaml"
  if cmp -s "$tmp/k8s.yaml" "$tmp/planted.yaml"; then
    echo "lint.sh: the planted error '$1' no longer applies to the rendered manifests; update it" >&2; exit 1
  fi
  if timeout 60 "$tmp/k8svalidate" "$tmp/planted.yaml" >/dev/null 2>"$tmp/planted.err"; then
    echo "k8svalidate accepted manifests with $1" >&2; exit 1
  fi
  if ! grep -qF -- "$3" "$tmp/planted.err"; then
    echo "k8svalidate refused manifests with $1, but not for it:" >&2; cat "$tmp/planted.err" >&2; exit 1
  fi
  planted=$((planted + 1))
}
plant "an unknown field in a container" 's/^        imagePullPolicy: /        imagePullPolcy: /' \
  'unknown field "spec.template.spec.containers[0].imagePullPolcy"'
plant 'replicas: "3"' 's/^  replicas: 3$/  replicas: "3"/' 'DeploymentSpec.spec.replicas of type int32'
plant "a misspelled kind" 's/^kind: Deployment$/kind: Deploymnet/' 'no kind "Deploymnet" is registered for version "apps/v1"'
plant "PodDisruptionBudget in policy/v1beta1" 's|^apiVersion: policy/v1$|apiVersion: policy/v1beta1|' \
  'no kind "PodDisruptionBudget" is registered for version "policy/v1beta1"'
plant "a field in the wrong case" 's/^  revisionHistoryLimit: /  RevisionHistoryLimit: /' 'unknown field "spec.RevisionHistoryLimit"'
plant "a duplicate field" 's/^  revisionHistoryLimit: \(.*\)$/&\n  revisionHistoryLimit: \1/' 'key "revisionHistoryLimit" already set'
plant "two container ports alike" 's/containerPort: 9090$/containerPort: 8080/' 'ports[1]: Duplicate value: "containerPort=8080, protocol=TCP"'
plant "a required field missing" '/^ *maxSkew: /d' 'topologySpreadConstraints[0].maxSkew: Required value'
plant "a quantity that does not parse" 's/^\( *memory: \)1Gi$/\11 GB/' 'quantities must match'
plant "an invalid namespace" 's/^  namespace: realsync$/  namespace: RealSync/' 'metadata.namespace: Invalid value: "RealSync"'
plant "an invalid label value" 's|^\( *app.kubernetes.io/name: \)realsyncd$|\1realsyncd!|' 'labels: Invalid value: "realsyncd!"'
echo "k8svalidate refused each of $planted planted errors"
# PyYAML comes with Debian's yamllint, for /usr/bin/python3.
py=python3; python3 -c 'import yaml' 2>/dev/null || py=/usr/bin/python3
"$py" lint/check_k8s.py "$tmp/k8s.yaml"
# Self-test: without the admin Ingress's denylist /v1/admin is open, refused.
sed '/denylist-source-range/d' "$tmp/k8s.yaml" > "$tmp/k8s-admin-open.yaml"
if out=$("$py" lint/check_k8s.py "$tmp/k8s-admin-open.yaml" 2>&1) || ! grep -qF "with /v1/admin open" <<<"$out"; then
  echo "check_k8s.py passed manifests whose Ingress leaves /v1/admin open: $out" >&2; exit 1
fi

step "the stack in small on loopback: Redis Cluster, two realsyncd, HAProxy"
# Free loopback ports; a Redis node also needs its port + 10000 (cluster bus).
read -r -a ports < <(python3 -c '
import socket
out, p = [], 21000
while len(out) < 11 and p < 29000:
    p += 1
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        out.append(p)
    except OSError:
        pass
print(*out)')
redis_ports=("${ports[@]:0:6}")
nodes=()
for p in "${redis_ports[@]}"; do
  mkdir -p "$tmp/redis-$p"
  redis-server redis/redis.conf --port "$p" --bind 127.0.0.1 --dir "$tmp/redis-$p" \
    --cluster-config-file "$tmp/redis-$p/nodes.conf" --cluster-announce-hostname localhost \
    --maxmemory 64mb --save "" --logfile "$tmp/redis-$p/log" &
  pids+=($!)
  nodes+=("127.0.0.1:$p")
done
timeout 60 sh redis/cluster-init.sh "${nodes[@]}" > "$tmp/cluster-init.log"
again=$(timeout 30 sh redis/cluster-init.sh "${nodes[@]}")
grep -q "already exists" <<<"$again" || { echo "cluster-init.sh is not idempotent: $again" >&2; exit 1; }
[ "$(redis-cli -p "${redis_ports[0]}" config get maxmemory-policy | tail -1)" = noeviction ]
[ "$(redis-cli -p "${redis_ports[0]}" config get appendonly | tail -1)" = yes ]

api1=${ports[6]} api2=${ports[7]} proxy=${ports[8]}
# The admin routes on, so that the proxy, not their absence, refuses them.
admin_token="deploy-lint-admin-token-0123456789abcdef"
for p in "$api1" "$api2"; do
  REALSYNC_ADDR="127.0.0.1:$p" REALSYNC_REDIS_CLUSTER_ADDRS="localhost:${redis_ports[0]},localhost:${redis_ports[1]}" \
    REALSYNC_JWT_SECRET=deploy-lint REALSYNC_KEY_PREFIX=lint REALSYNC_SSE_HEARTBEAT=1s REALSYNC_ADMIN_TOKEN="$admin_token" \
    "$tmp/realsyncd" > "$tmp/realsyncd-$p.log" 2>&1 &
  pids+=($!)
done
# haproxy.cfg with loopback addresses, no Docker DNS, short timeouts.
sed -e "s/bind :8080/bind 127.0.0.1:$proxy/" -e "s/realsync-1:8080/127.0.0.1:$api1/" -e "s/realsync-2:8080/127.0.0.1:$api2/" \
  -e 's/ resolvers docker//' -e '/^resolvers docker/,/^  hold valid/d' \
  -e 's/timeout client 60s/timeout client 3s/' -e 's/timeout server 60s/timeout server 3s/' -e 's/maxconn 20000/maxconn 1000/' \
  haproxy/haproxy.cfg > "$tmp/haproxy.cfg"
for want in "127.0.0.1:$api1" "127.0.0.1:$api2" "timeout client 3s" "timeout server 3s" "bind 127.0.0.1:$proxy"; do
  grep -qF "$want" "$tmp/haproxy.cfg" || { echo "lint.sh: haproxy.cfg changed shape ($want); update the loopback copy" >&2; exit 1; }
done
haproxy -f "$tmp/haproxy.cfg" -db > "$tmp/haproxy.log" 2>&1 &
pids+=($!)

base="http://127.0.0.1:$proxy"
ready=0
for _ in $(seq 1 60); do
  if curl -sf "http://127.0.0.1:$api1/readyz" >/dev/null && curl -sf "http://127.0.0.1:$api2/readyz" >/dev/null &&
     curl -sf "$base/readyz" >/dev/null; then ready=1; break; fi
  sleep 0.5
done
[ "$ready" = 1 ] || { echo "realsyncd did not become ready behind the proxy" >&2; tail -5 "$tmp"/realsyncd-*.log >&2; exit 1; }
json() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
token=$(curl -sf -XPOST "$base/v1/auth/guest" -H 'Content-Type: application/json' -d '{"name":"lint"}' | json '["token"]')
room=$(curl -sf -XPOST "$base/v1/rooms" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d '{"name":"lint","mode":"lint","region":"lo","maxPlayers":2}' | json '["room"]["id"]')
# Held 8 s, past the proxy's 3 s timeouts: the heartbeat keeps it open.
st=$(curl -sf -XPOST "$base/v1/rooms/$room/stream-token" -H "Authorization: Bearer $token" | json '["token"]')
curl -sN --max-time 8 "$base/v1/rooms/$room/events?token=$st" > "$tmp/stream.txt" || true &
stream=$!
sleep 5
curl -sf -o /dev/null -XPATCH "$base/v1/rooms/$room/state" -H "Authorization: Bearer $token" \
  -H 'Content-Type: application/merge-patch+json' -d '{"lint":1}'
wait "$stream"
grep -q '^event: snapshot' "$tmp/stream.txt" || { echo "no snapshot through the proxy" >&2; exit 1; }
grep -q '^event: state' "$tmp/stream.txt" || { echo "the state event did not come through the proxy" >&2; exit 1; }
pings=$(grep -c '^: ping' "$tmp/stream.txt" || true)
[ "$pings" -ge 5 ] || { echo "the stream was cut before 8 s ($pings heartbeats)" >&2; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "$base/metrics")
[ "$code" = 404 ] || { echo "the proxy serves /metrics ($code)" >&2; exit 1; }
# The admin routes answer on an instance's own port, and not through the
# proxy. A percent-escaped spelling (/v1/%61dmin/) is not the proxy's to
# refuse: realsyncd routes on the path as sent and answers it 404 itself.
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $admin_token" "http://127.0.0.1:$api1/v1/admin/instances")
[ "$code" = 200 ] || { echo "an instance answers GET /v1/admin/instances $code with the admin token, not 200" >&2; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $admin_token" "$base/v1/admin/instances")
[ "$code" = 404 ] || { echo "the proxy serves /v1/admin/instances ($code)" >&2; exit 1; }
# HAProxy logs the stream's line once it has seen the client go.
for _ in $(seq 1 50); do grep -qF "/v1/rooms/$room/events" "$tmp/haproxy.log" && break; sleep 0.1; done
grep -qF "/v1/rooms/$room/events" "$tmp/haproxy.log" || { echo "HAProxy logged no access line for the stream" >&2; exit 1; }
if grep -qF "$token" "$tmp/haproxy.log"; then echo "HAProxy's access log holds a token" >&2; exit 1; fi
echo "stream through HAProxy: snapshot, live state event, $pings heartbeats over 8 s; /metrics and /v1/admin/ refused; no token in its log"
step "ok"
