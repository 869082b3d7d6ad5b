#!/usr/bin/env python3
"""Checks the Grafana dashboard and the alert rules against the metrics.

Usage: check_queries.py DASHBOARD.json ALERTS.yml METRICS.txt OUT_RULES.json

- the dashboard is valid JSON with unique panel ids, panels that do not
  overlap, and every query on the dashboard's data source variable;
- every realsync_ metric a query names (dashboard and alerts) is in
  METRICS.txt (histograms with _bucket/_sum/_count), and so is every label
  a selector matches on; every metric of METRICS.txt is on the dashboard;
- OUT_RULES.json receives each dashboard query as a recording rule, with
  Grafana's variables replaced, for `promtool check rules` to parse.
Exits 1 with one line per problem.
"""
import json
import re
import sys

SCOPE_LABELS = {"job", "instance"}


def load_metrics(path):
    metrics = {}
    for line in open(path, encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, kind, labels = line.split()
        labels = set() if labels == "-" else set(labels.split(","))
        metrics[name] = (kind, labels)
    series = {}
    for name, (kind, labels) in metrics.items():
        if kind == "histogram":
            series[name + "_bucket"] = (name, labels | {"le"})
            series[name + "_sum"] = (name, labels)
            series[name + "_count"] = (name, labels)
        else:
            series[name] = (name, labels)
    return metrics, series


def grafana_exprs(dash, problems):
    exprs = []
    seen_ids = set()
    boxes = []

    def walk(panels):
        for p in panels:
            pid = p.get("id")
            if pid in seen_ids:
                problems.append(f"dashboard: panel id {pid} is used twice")
            seen_ids.add(pid)
            g = p.get("gridPos", {})
            box = (g.get("x", 0), g.get("y", 0), g.get("w", 0), g.get("h", 0), p.get("title"))
            for other in boxes:
                if (box[0] < other[0] + other[2] and other[0] < box[0] + box[2]
                        and box[1] < other[1] + other[3] and other[1] < box[1] + box[3]):
                    problems.append(f"dashboard: panels {box[4]!r} and {other[4]!r} overlap")
            boxes.append(box)
            if box[0] + box[2] > 24:
                problems.append(f"dashboard: panel {box[4]!r} is wider than the grid")
            for t in p.get("targets", []):
                ds = t.get("datasource", p.get("datasource"))
                if not ds or ds.get("uid") != "${datasource}":
                    problems.append(f"dashboard: a query of {p.get('title')!r} does not use the ${{datasource}} variable")
                if t.get("expr"):
                    exprs.append((p.get("title"), t["expr"]))
            walk(p.get("panels", []))

    walk(dash.get("panels", []))
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if v.get("type") == "query" and q:
            m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q)
            if not m:
                problems.append(f"dashboard: variable {v['name']}: unexpected query {q!r}")
            else:
                exprs.append((f"variable {v['name']}", m.group(1)))
    return exprs


def substitute(expr):
    expr = expr.replace("$__rate_interval", "5m").replace("$__interval", "1m")
    return re.sub(r"\$\{?(\w+)\}?", ".*", expr)


SELECTOR = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")
NAME = re.compile(r"\b(realsync_[a-z0-9_]+)\b")
MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)")


def check_names(where, expr, series, problems, used):
    for name in NAME.findall(expr):
        if name not in series:
            problems.append(f"{where}: unknown metric {name}")
        else:
            used.add(series[name][0])
    for name, body in SELECTOR.findall(expr):
        if name in series:
            allowed = series[name][1] | SCOPE_LABELS
            for label, _ in MATCHER.findall(body):
                if label not in allowed:
                    problems.append(f"{where}: {name} has no label {label}")


def alert_exprs(path):
    # The rules file is YAML; its `expr:` values are either on one line or a
    # `|` block. Read them without a YAML library.
    out, lines = [], open(path, encoding="utf-8").read().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)expr:\s*(.*)$", lines[i])
        if m:
            indent, rest = len(m.group(1)), m.group(2)
            if rest.strip() == "|":
                block = []
                i += 1
                while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                    block.append(lines[i].strip())
                    i += 1
                out.append(" ".join(block))
                continue
            out.append(rest)
        i += 1
    return out


def main():
    dash_path, alerts_path, metrics_path, out_path = sys.argv[1:5]
    problems = []
    metrics, series = load_metrics(metrics_path)
    try:
        dash = json.load(open(dash_path, encoding="utf-8"))
    except ValueError as e:
        print(f"{dash_path}: not JSON: {e}")
        return 1
    for key in ("title", "uid", "panels", "schemaVersion"):
        if key not in dash:
            problems.append(f"dashboard: no {key}")
    exprs = grafana_exprs(dash, problems)
    used = set()
    rules = []
    for n, (title, expr) in enumerate(exprs):
        check_names(f"dashboard {title!r}", expr, series, problems, used)
        rules.append({"record": f"dashboard:query_{n}", "expr": substitute(expr)})
    missing = sorted(set(metrics) - used)
    if missing:
        problems.append("dashboard: shows none of " + ", ".join(missing))
    alerts = alert_exprs(alerts_path)
    if not alerts:
        problems.append(f"{alerts_path}: no expr found")
    for expr in alerts:
        check_names(alerts_path, expr, series, problems, set())
    json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, open(out_path, "w"), indent=1)
    for p in problems:
        print(p)
    print(f"{len(exprs)} dashboard queries, {len(alerts)} alert expressions, {len(used)}/{len(metrics)} metrics on the dashboard")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
