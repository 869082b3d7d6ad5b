#!/usr/bin/env python3
"""Checks the rendered Kubernetes manifests (kubectl kustomize deploy/k8s)
for what a schema cannot see.

Usage: check_k8s.py RENDERED.yaml

Checks: terminationGracePeriodSeconds exceeds the preStop sleep plus
REALSYNC_SHUTDOWN_TIMEOUT; liveness probes /healthz and readiness /readyz;
requests and a memory limit are set, with GOMEMLIMIT below the limit; the
Prometheus annotations name the metrics port of REALSYNC_METRICS_ADDR; the
PodDisruptionBudget, the Service and the Deployment select the pods; the
container runs as non-root; REALSYNC_ENV is production, REALSYNC_JWT_SECRET
comes from a Secret (never a ConfigMap or a literal), REALSYNC_TRUSTED_PROXIES
is set, a keys file set lies on a mounted volume; every host an Ingress
routes / for has an Ingress of the same class closing /v1/admin (Prefix) to
every address (ingress-nginx's denylist-source-range 0.0.0.0/0 and ::/0).
Exits 1 with one line per problem.
"""
import posixpath
import re
import sys

import yaml

UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "": 1}


def size(v):
    m = re.fullmatch(r"(\d+)([KMG]i(?:B)?)?", str(v))
    return int(m.group(1)) * UNITS[m.group(2) or ""] if m else None


def seconds(d):
    return sum(float(n) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[u] for n, u in re.findall(r"([\d.]+)(ms|s|m|h)", d))


DENY_ALL = {"0.0.0.0/0", "::/0"}


def admin_closed(ingresses):
    """Problems of the Ingresses routing a host's / without an Ingress of
    the same class closing /v1/admin there to every address."""
    public, closed = set(), set()
    for ing in ingresses:
        cls = ing["spec"].get("ingressClassName")
        deny = ing["metadata"].get("annotations", {}).get("nginx.ingress.kubernetes.io/denylist-source-range", "")
        for rule in ing["spec"].get("rules", []):
            for p in rule.get("http", {}).get("paths", []):
                where = (cls, rule.get("host"))
                if p["path"] == "/":
                    public.add(where)
                elif p["path"] == "/v1/admin" and p.get("pathType") == "Prefix" and DENY_ALL <= {c.strip() for c in deny.split(",")}:
                    closed.add(where)
    return [f"Ingress class {c} routes / of host {h} with /v1/admin open: no Ingress of that host and class denies /v1/admin to 0.0.0.0/0 and ::/0"
            for c, h in sorted(public - closed, key=str)]


def main():
    docs = [d for d in yaml.safe_load_all(open(sys.argv[1], encoding="utf-8")) if d]
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    problems = []
    config = {}
    for cm in by_kind.get("ConfigMap", []):
        config.update(cm.get("data", {}))
    deps = by_kind.get("Deployment", [])
    if len(deps) != 1:
        problems.append(f"expected one Deployment, found {len(deps)}")
        deps = deps[:1]
    for dep in deps:
        spec = dep["spec"]["template"]["spec"]
        labels = dep["spec"]["template"]["metadata"]["labels"]
        annotations = dep["spec"]["template"]["metadata"].get("annotations", {})
        c = spec["containers"][0]
        env = dict(config)
        env.update({e["name"]: e.get("value") for e in c.get("env", [])})
        sleep = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
        shutdown = seconds(env.get("REALSYNC_SHUTDOWN_TIMEOUT") or "15s")
        grace = spec.get("terminationGracePeriodSeconds", 30)
        if grace <= sleep + shutdown:
            problems.append(f"terminationGracePeriodSeconds {grace} must exceed preStop sleep {sleep} + REALSYNC_SHUTDOWN_TIMEOUT {shutdown:g}")
        if c.get("livenessProbe", {}).get("httpGet", {}).get("path") != "/healthz":
            problems.append("the liveness probe must be GET /healthz (a Redis outage must not restart pods)")
        if c.get("readinessProbe", {}).get("httpGet", {}).get("path") != "/readyz":
            problems.append("the readiness probe must be GET /readyz")
        res = c.get("resources", {})
        if not res.get("requests", {}).get("cpu") or not res.get("requests", {}).get("memory"):
            problems.append("CPU and memory requests must be set")
        limit = size(res.get("limits", {}).get("memory"))
        if not limit:
            problems.append("a memory limit must be set")
        elif env.get("GOMEMLIMIT") and not size(env["GOMEMLIMIT"]) < limit:
            problems.append(f"GOMEMLIMIT {env['GOMEMLIMIT']} must be below the memory limit")
        ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
        maddr = env.get("REALSYNC_METRICS_ADDR") or env.get("REALSYNC_ADDR") or ":8080"
        mport = int(maddr.rsplit(":", 1)[1])
        if annotations.get("prometheus.io/port") != str(mport) or mport not in ports.values():
            problems.append(f"prometheus.io/port {annotations.get('prometheus.io/port')} is not the metrics port {mport} of a container port")
        sc = {**spec.get("securityContext", {}), **c.get("securityContext", {})}
        if not sc.get("runAsNonRoot") or not sc.get("runAsUser"):
            problems.append("the pod must run as a numeric non-root user")
        if env.get("REALSYNC_ENV") != "production":
            problems.append(f"REALSYNC_ENV is {env.get('REALSYNC_ENV')!r}, not production")
        if "REALSYNC_JWT_SECRET" in env:
            problems.append("REALSYNC_JWT_SECRET is in a ConfigMap or a literal: it belongs in the Secret")
        if not any(r.get("secretRef") for r in c.get("envFrom", [])):
            problems.append("no Secret in envFrom: REALSYNC_JWT_SECRET is required in production")
        if not env.get("REALSYNC_TRUSTED_PROXIES"):
            problems.append("REALSYNC_TRUSTED_PROXIES is unset: behind the Ingress every client would share one per-address limit")
        mounts = [m["mountPath"] for m in c.get("volumeMounts", [])]
        for var in ("REALSYNC_JWT_KEYS_FILE", "REALSYNC_API_KEYS_FILE"):
            f = env.get(var)
            if f and not any(posixpath.dirname(f) == m.rstrip("/") for m in mounts):
                problems.append(f"{var} {f} is not in a mounted volume's directory")
        for kind in ("Service", "PodDisruptionBudget"):
            for obj in by_kind.get(kind, []):
                sel = obj["spec"]["selector"]
                sel = sel.get("matchLabels", sel) if kind == "PodDisruptionBudget" else sel
                if not sel or any(labels.get(k) != v for k, v in sel.items()):
                    problems.append(f"{kind} {obj['metadata']['name']} does not select the Deployment's pods")
        if dep["spec"]["selector"]["matchLabels"].items() - labels.items():
            problems.append("the Deployment's selector does not match its pods")
    if not by_kind.get("PodDisruptionBudget"):
        problems.append("no PodDisruptionBudget")
    problems += admin_closed(by_kind.get("Ingress", []))
    for p in problems:
        print(p)
    print(f"{len(docs)} objects: " + ", ".join(f"{len(v)} {k}" for k, v in sorted(by_kind.items())))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
