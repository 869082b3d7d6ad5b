#!/usr/bin/env python3
"""Checks deploy/compose.yaml as Docker Compose resolves it against the
files it names.

Usage: check_compose.py RESOLVED.json HAPROXY_CFG PROMETHEUS_YML

RESOLVED.json is composeconfig's output (the project after interpolation
and merges). Checks: the realsyncd services share one environment; every
bind-mounted file exists; each realsyncd service's stop_grace_period
exceeds its REALSYNC_SHUTDOWN_TIMEOUT; HAProxy's servers and Prometheus'
targets are exactly the realsyncd services, on their API and metrics
ports; REALSYNC_ENV is set, and REALSYNC_TRUSTED_PROXIES covers the
subnets of the proxy's networks, to which haproxy.cfg sends
X-Forwarded-For (option forwardfor). Exits 1 with one line per problem.
"""
import ipaddress
import json
import os
import re
import sys


def seconds(d):
    total = 0.0
    for n, unit in re.findall(r"([\d.]+)(ms|s|m|h)", d):
        total += float(n) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total


def default_shutdown_timeout():
    """realsyncd's own default of REALSYNC_SHUTDOWN_TIMEOUT, read from its
    configuration (cmd/realsyncd/config.go), so this check follows it."""
    config = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "cmd", "realsyncd", "config.go")
    m = re.search(r'env\("REALSYNC_SHUTDOWN_TIMEOUT",\s*"([^"]+)"\)', open(config, encoding="utf-8").read())
    if not m:
        sys.exit(f"{config}: REALSYNC_SHUTDOWN_TIMEOUT's default not found")
    return m.group(1)


def port(addr, default):
    return int(addr.rsplit(":", 1)[1]) if addr else default


def main():
    resolved, haproxy_cfg, prometheus_yml = sys.argv[1:4]
    project = json.load(open(resolved, encoding="utf-8"))
    services = project["services"]
    problems = []
    realsyncd = {n: s for n, s in services.items() if "realsyncd" in s.get("image", "")}
    if len(realsyncd) < 2:
        problems.append(f"fewer than two realsyncd services: {sorted(realsyncd)}")
    envs = {n: s.get("environment", {}) for n, s in realsyncd.items()}
    first = next(iter(envs.values()), {})
    shutdown_default = default_shutdown_timeout()
    for n, env in envs.items():
        if env != first:
            problems.append(f"{n}: environment differs from the other instances'")
        grace = seconds(realsyncd[n].get("stop_grace_period", "10s"))
        shutdown = seconds(env.get("REALSYNC_SHUTDOWN_TIMEOUT") or shutdown_default)
        if grace <= shutdown:
            problems.append(f"{n}: stop_grace_period ({grace:g}s) must exceed REALSYNC_SHUTDOWN_TIMEOUT ({shutdown:g}s)")
    for n, s in services.items():
        for v in s.get("volumes", []):
            if v.get("type") == "bind" and not os.path.exists(v["source"]):
                problems.append(f"{n}: bind-mounted {v['source']} does not exist")
    api = {f"{n}:{port(e.get('REALSYNC_ADDR'), 8080)}" for n, e in envs.items()}
    metrics = {f"{n}:{port(e.get('REALSYNC_METRICS_ADDR') or e.get('REALSYNC_ADDR'), 8080)}" for n, e in envs.items()}
    servers = set(re.findall(r"^\s*server\s+\S+\s+(\S+)", open(haproxy_cfg, encoding="utf-8").read(), re.M))
    if servers != api:
        problems.append(f"haproxy.cfg servers {sorted(servers)} are not the instances {sorted(api)}")
    prom = open(prometheus_yml, encoding="utf-8").read()
    job = re.search(r"job_name:\s*realsync\b(.*?)(?:\n\s*- job_name:|\Z)", prom, re.S)
    targets = set(re.findall(r"^\s*-\s*([\w.-]+:\d+)\s*$", job.group(1), re.M)) if job else set()
    if targets != metrics:
        problems.append(f"prometheus.yml realsync targets {sorted(targets)} are not the metrics addresses {sorted(metrics)}")
    if first.get("REALSYNC_ENV") not in ("development", "production"):
        problems.append("REALSYNC_ENV must be set, to development or production")
    trusted = []
    for cidr in (first.get("REALSYNC_TRUSTED_PROXIES") or "").split(","):
        try:
            trusted.append(ipaddress.ip_network(cidr.strip()))
        except ValueError:
            problems.append(f"REALSYNC_TRUSTED_PROXIES: {cidr!r} is not a CIDR")
    proxies = [n for n, s in services.items() if "haproxy" in s.get("image", "")]
    for n in proxies:
        for net in services[n].get("networks") or {"default": None}:
            subnets = [c.get("subnet") for c in project.get("networks", {}).get(net, {}).get("ipam", {}).get("config", [])]
            if not subnets:
                problems.append(f"{n}: network {net} has no fixed subnet for REALSYNC_TRUSTED_PROXIES to name")
            for sn in filter(None, subnets):
                if not any(ipaddress.ip_network(sn).subnet_of(t) for t in trusted if t.version == ipaddress.ip_network(sn).version):
                    problems.append(f"{n}: its network {net} ({sn}) is not in REALSYNC_TRUSTED_PROXIES; every client would share one per-address limit")
    if not re.search(r"^\s*option\s+forwardfor\b", open(haproxy_cfg, encoding="utf-8").read(), re.M):
        problems.append("haproxy.cfg: no option forwardfor; realsyncd would see every client as the proxy")
    for p in problems:
        print(p)
    print(f"{len(services)} services, {len(realsyncd)} realsyncd instances behind {len(servers)} proxy servers, {len(targets)} scrape targets")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
