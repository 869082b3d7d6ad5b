#!/usr/bin/env python3
"""Issue 15's and issue 6's targets, judged from one run of
scripts/bench.sh: for each target, the figure the run measured, the limit
it is compared with (both from the same log), the ratio, and whether it
is met. It reads that run's log (by default the one named on
docs/BENCHMARKS.md's "Run:" line):

    python3 scripts/targets.py [docs/bench/<run>.log]
    python3 scripts/targets.py --check [docs/bench/<run>.log]

With --check it also looks for every figure it prints in docs/BENCHMARKS.md's
tables of those targets, and fails naming those it does not find: a
figure copied wrong from the log, or derived wrong, fails it. It is the
acceptance run's reading too: run scripts/bench.sh placed on a machine's
cores (REALSYNC_BENCH_*_CPUS), then this script on its log.

Where a target is measured in rounds, a ratio is taken within each round
(the run's figures move between rounds more than between the two sides of
one) and the median of the rounds' ratios is the verdict's figure. No
figure here is measured by this script.
"""

import os
import re
import statistics
import sys

sys.dont_write_bytecode = True  # no scripts/__pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capacity import REDIS_PER_REQ as REDIS_CPU, SERVER_PER_REQ as SERVER, ROOT, Inputs, run_log  # noqa: E402

REDIS_SCRIPTS = r"redis: .*?; scripts ([\d.]+) µs"
PER_EVENT = r"server CPU .*?: ([\d.]+) µs per event delivered"
PER_STREAM = r"server RSS .*?: ([\d.]+) KiB per stream"
WHOLE = r"server RSS .*?\(the whole process: ([\d.]+) KiB per stream\)"
SETTLED = r"settled RSS .*?: ([\d.]+) KiB per stream"


class Rows:
    """The targets judged so far, each with the figures --check looks for."""

    def __init__(self, log):
        self.i, self.rows = Inputs(log), []

    def value(self, title, pattern):
        return self.i.find(title, title, pattern)

    def rounds(self, titles):
        """The titles of a measurement in rounds that the log has (a smoke
        run's log has the first round only)."""
        have = [t for t in titles if t in self.i.secs]
        if not have:
            sys.exit(f"{self.i.path}: none of the sections {titles!r}")
        return have if self.i.smoke else titles

    def add(self, item, what, figure, limit, target, met, figures, source):
        """A target of issue 15 (item "1".."6") or of issue 6 (item "issue 6")."""
        self.rows.append((item, what, figure, limit, target, met, figures, source))


def x(v):
    return f"{v:.2f}×"


def over(r, ta, tb, pattern):
    """Section ta's figure over section tb's."""
    b = r.value(tb, pattern)
    # a smoke run's few events may take less CPU than one of the kernel's
    # ticks: its figures mean nothing, and may read 0
    return r.value(ta, pattern) / b if b or not r.i.smoke else float("nan")


def ratio_rounds(r, a_titles, b_titles, pattern):
    """Per round a / b, for the rounds the log has."""
    return [over(r, ta, tb, pattern) for ta, tb in zip(a_titles, b_titles) if ta in r.i.secs or not r.i.smoke]


def item1(r):
    t = "Redis time per script, one at a time, against the anchor"
    bench = r.i.secs.get(t, "")

    def metric(name):
        m = re.search(r"\s([\d.]+) " + re.escape(name) + r"(?:\s|$)", bench)
        if not m:
            sys.exit(f"{r.i.path}, \"== {t}\": no {name}")
        return float(m.group(1))

    anchor_script, anchor_cpu = metric("anchor-script-µs/op"), metric("anchor-cpu-µs/op")
    for op, target in (("join", 2.0), ("leave", 2.0), ("patch", 1.5)):
        script, cpu = metric(f"fn-{op}-script-µs/op"), metric(f"fn-{op}-cpu-µs/op")
        ratio = metric(f"fn-{op}-script/anchor")
        r.add("1", f"{op}, one call at a time: the script's Redis time against the anchor's",
              f"{script:.1f} µs, {ratio:.3f}× (Redis CPU {cpu:.1f} µs, {cpu / anchor_cpu:.2f}×)",
              f"the anchor: {anchor_script:.1f} µs of script, {anchor_cpu:.1f} µs of Redis CPU",
              f"≤ {target}", ratio <= target,
              [f"{ratio:.2f}", f"{cpu / anchor_cpu:.2f}×"], f"\"== {t}\"")
    # over HTTP: realsyncd's join + leave and patch against the anchor's
    # server of the same section and round, by Redis' CPU and by scripts
    pairs = [("capacity input: join=1", "capacity input: the anchor", "join + leave"),
             ("capacity input: patch=1", "capacity input: the anchor", "patch")]
    for n in (1, 2, 3):
        pairs.append((f"server CPU, round {n}: join + leave", f"server CPU, round {n}: anchor", "join + leave"))
    for n in (1, 2):
        pairs.append((f"join + leave churn, Redis' figures (round {n})",
                      f"anchor: one EVALSHA of the join-shaped script per request (round {n})", "join + leave"))
        pairs.append((f"state patches, Redis' figures (round {n})",
                      f"anchor: one EVALSHA of the join-shaped script per request (round {n})", "patch"))
    for op, target in (("join + leave", 2.0), ("patch", 1.5)):
        # a smoke run's log lacks later rounds
        mine = [(a, b) for a, b, o in pairs if o == op and (not r.i.smoke or a in r.i.secs and b in r.i.secs)]
        cpu = [over(r, a, b, REDIS_CPU) for a, b in mine]
        script = [over(r, a, b, REDIS_SCRIPTS) for a, b in mine]
        met = sum(c <= target for c in cpu)
        r.add("1", f"{op} over HTTP, batched: Redis CPU per request against the anchor's",
              f"{', '.join(x(c) for c in cpu)}: within {target}× in {met} of {len(cpu)}; by scripts' time "
              f"{', '.join(x(s) for s in script)}",
              "the anchor's server, in the same section and round",
              f"≤ {target}", met == len(cpu),
              [x(v) for v in cpu + script], ", ".join(f"\"== {a}\"" for a, _ in mine))


def item2(r):
    titles = r.rounds([f"batching, round {n}: join-shaped scripts from 64 callers (off, natural, "
                       "200us window) and redis-benchmark -P 1 / -P 16 of the same EVALSHA" for n in (1, 2, 3)])

    def rate(t, variant):
        return r.value(t, r"BenchmarkBatching/evalsha/" + re.escape(variant) + r"(?:-\d+)?\s.*?([\d.]+) ops/s")

    nat = [rate(t, "natural") for t in titles]
    p1 = [rate(t, "redis-benchmark-P1") for t in titles]
    p16 = [rate(t, "redis-benchmark-P16") for t in titles]
    n, a, b = statistics.median(nat), statistics.median(p1), statistics.median(p16)
    r.add("2", "natural batching's EVALSHA rate, nearer redis-benchmark's -P 16 than its -P 1",
          f"{n:.0f}/s: {n / a:.0%} of -P 1, {n / b:.0%} of -P 16 (medians)",
          f"-P 1 {a:.0f}/s, -P 16 {b:.0f}/s (medians)", "nearer -P 16",
          abs(n - b) < abs(n - a), [f"{n / a:.0%}", f"{n / b:.0%}"],
          ", ".join(f"\"== {t}\"" for t in titles))


def busiest(r, title):
    """The busiest master's share of the Cluster's Redis CPU, from the
    masters' own lines (the summary's percentage is rounded)."""
    shares = [float(v) for v in re.findall(r"^\s+\S+\s+[\d.]+ s CPU \(([\d.]+)%\)", r.i.secs[title], re.M)]
    if not shares:
        sys.exit(f"{r.i.path}, \"== {title}\": no master's line")
    return max(shares) / 100


def item3(r):
    base = "quick-join + leave into one mode and region, 3-master Cluster, K={k}, round {n}"
    for n in (1, 2):
        k1, k3 = base.format(k=1, n=n), base.format(k=3, n=n)
        if k3 not in r.i.secs and r.i.smoke:
            continue
        all1 = r.value(k1, r"masters: .*? ([\d.]+) µs CPU and")
        all3 = r.value(k3, r"masters: .*? ([\d.]+) µs CPU and")
        share1, share3 = busiest(r, k1), busiest(r, k3)
        bound = r.value(k3, r"\(bound: ([\d.]+)× one master\)")
        by_cpu = all1 / (all3 * share3)
        r.add("3", f"round {n}: one (mode, region)'s quick-joins over K = 3 stripes against one master",
              f"by the busiest master's Redis CPU per request {x(by_cpu)} one master doing all of K = 1's work, "
              f"{x(all1 * share1 / (all3 * share3))} K = 1's busiest; by share {x(bound)}",
              f"K = 1 in the same round", "≥ 2.5", by_cpu >= 2.5,
              [x(by_cpu), x(all1 * share1 / (all3 * share3)), x(bound)], f"\"== {k1}\", \"== {k3}\"")


def item4(r):
    rounds = [1, 2, 3]
    minimal = [f"server CPU, round {n}: minimal handler" for n in rounds]
    for what, kind, target in (("GET room", "GET room", 2.0), ("list page of 20", "list page of 20", 2.0),
                               ("join or leave", "join + leave", 1.5)):
        mine = [f"server CPU, round {n}: {kind}" for n in rounds]
        ratios = ratio_rounds(r, mine, minimal, SERVER)
        m = statistics.median(ratios)
        r.add("4", f"server CPU per {what} against the minimal handler's",
              f"{x(m)} (median; rounds {', '.join(x(v) for v in ratios)})",
              "the minimal handler of the same round", f"≤ {target}", m <= target,
              [x(m)], f"\"== server CPU, round N: {kind}\"")
    cached = [f"browse, round {n}: list page of 20, cached (REALSYNC_BROWSE_CACHE_TTL=1s)" for n in rounds]
    bmin = [f"browse, round {n}: minimal handler" for n in rounds]
    ratios = ratio_rounds(r, cached, bmin, SERVER)
    m = statistics.median(ratios)
    r.add("4", "server CPU per list page of 20 with the browsing cache on (1 s)",
          f"{x(m)} (median; rounds {', '.join(x(v) for v in ratios)})",
          "the minimal handler of the same round", "≤ 2.0", m <= 2.0,
          [x(m)], "\"== browse, round N: list page of 20, cached (REALSYNC_BROWSE_CACHE_TTL=1s)\"")


def item5(r):
    t = "quick-join + leave, 256 clients into one mode and region"
    _, p50, p99 = op_row(r, t, "quickjoin")
    r.add("5", "quick-join p99 against its p50, 256 clients into one mode and region",
          f"p50 {p50:.2f} ms, p99 {p99:.2f} ms: {p99 / p50:.2f}×", "", "≤ 4", p99 <= 4 * p50,
          [f"{p99:.2f} ms", f"{p99 / p50:.2f}"], f"\"== {t}\"")


def item6(r):
    mem = r.rounds([f"realsyncd: 10 000 streams on one instance, 200 patches/s (round {n})" for n in (1, 2, 3)])
    diff = [r.value(t, PER_STREAM) for t in mem]
    whole = [r.value(t, WHOLE) for t in mem]
    settled = [r.value(t, SETTLED) for t in mem if re.search(SETTLED, r.i.secs[t])]
    worst = max(diff + whole + settled)
    r.add("6", "resident memory per idle stream at 10 000 streams (HTTP/1.1)",
          f"{', '.join(f'{v:.1f}' for v in diff)} KiB by the difference, {', '.join(f'{v:.1f}' for v in whole)} KiB "
          f"the whole process" + (f", settled {min(settled):.1f} KiB" if settled else ""),
          "", "≤ 24 KiB", worst <= 24, [f"{v:.1f}" for v in diff + whole],
          ", ".join(f"\"== {t}\"" for t in mem))
    t = "h2c: 10 000 streams on one instance, 200 patches/s"
    if t in r.i.secs or not r.i.smoke:
        d, w = r.value(t, PER_STREAM), r.value(t, WHOLE)
        r.add("6", "resident memory per idle stream at 10 000 streams over h2c",
              f"{d:.1f} KiB by the difference, {w:.1f} KiB the whole process", "", "≤ 24 KiB",
              max(d, w) <= 24, [f"{d:.1f} KiB", f"{w:.1f} KiB"], f"\"== {t}\"")
    def fanout(what, mine, base, limit):
        """Item 6's fan-out row: base's CPU per event over mine's, by round."""
        eff = ratio_rounds(r, [base.format(n=n) for n in (1, 2, 3)], [mine.format(n=n) for n in (1, 2, 3)], PER_EVENT)
        m = statistics.median(eff)
        r.add("6", what, f"{m:.1%} (median; rounds {', '.join(f'{v:.1%}' for v in eff)})", limit, "≥ 95%", m >= 0.95,
              [f"{m:.1%}"] + [f"{v:.1%}" for v in eff], f"\"== {base.format(n='N')}\" against \"== {mine.format(n='N')}\"")

    for streams, rate, mine, base in (
            ("2 000", "100", "realsyncd: CPU per event, 2 000 streams, 100 patches/s (round {n})",
             "SSE baseline: CPU per event, 2 000 streams, 100 publishes/s (round {n})"),
            ("10 000", "200", "realsyncd: 10 000 streams on one instance, 200 patches/s (round {n})",
             "SSE baseline: minimal fan-out, 10 000 streams, 200 publishes/s (round {n})")):
        # efficiency: the baseline's CPU per event over realsyncd's
        fanout(f"fan-out at {streams} streams, {rate} writes/s: the baseline's CPU per event over realsyncd's",
               mine, base, "the minimal fan-out fed by the same Redis, in the same round")
    # over h2c against the minimal fan-out over h2c (logs before 2026-12-05
    # have no such baseline), and against it served as realsyncd serves
    # HTTP/2 (x/net's server, random write scheduler; logs before
    # 2026-12-06 have none)
    mine = "h2c: 2 000 streams, 100 patches/s (round {n})"
    base = "h2c baseline: CPU per event, 2 000 streams, 100 publishes/s (round {n})"
    same = "h2c baseline, random write scheduler: CPU per event, 2 000 streams, 100 publishes/s (round {n})"
    if base.format(n=1) in r.i.secs:
        fanout("fan-out over h2c at 2 000 streams, 100 writes/s: the h2c baseline's CPU per event over realsyncd's",
               mine, base, "the minimal fan-out over h2c fed by the same Redis, in the same round")
    if same.format(n=1) in r.i.secs:
        fanout("fan-out over h2c at 2 000 streams, 100 writes/s, against the h2c baseline with realsyncd's write scheduler",
               mine, same, "the minimal fan-out over h2c served as realsyncd serves HTTP/2 (x/net, random write scheduler), in the same round")


def grouped(n):
    """An integer as the documents write it: 4 495, 63 092."""
    return f"{n:,.0f}".replace(",", " ")


def op_row(r, title, op):
    """The count per second, p50 and p99 (ms) of an rsload ops row."""
    m = re.search(r"^\s+" + re.escape(op) + r"\s+\d+\s+(\d+)\s+([\d.]+)\s+[\d.]+\s+([\d.]+)",
                  r.i.secs.get(title, ""), re.M)
    if not m:
        sys.exit(f"{r.i.path}, \"== {title}\": no {op} row")
    return float(m.group(1)), float(m.group(2)), float(m.group(3))


def issue6(r):
    minimal = "minimal Go handler (the machine's HTTP limit with this load tool)"
    ceiling = "redis-benchmark: EVALSHA of the join and state patch scripts, 64 clients, -P 1"
    limit, _, limit_p99 = op_row(r, minimal, "healthz")
    for op, title, bench, name in (("join", "join + leave churn", "join", "joins"),
                                   ("patch", "state patches", "patch", "state patches")):
        rate, _, p99 = op_row(r, title, op)
        rb = r.value(ceiling, r"BenchmarkRedisCeiling/" + bench + r"(?:-\d+)?\s.*?([\d.]+) evalsha/s")
        r.add("issue 6", f"{name}: ≥ 20 000/s, ≥ 60% of redis-benchmark's EVALSHA rate, p99 ≤ 10 ms at 64 clients",
              f"{grouped(rate)}/s, {rate / rb:.0%} of redis-benchmark's {grouped(rb)}/s, p99 {p99:.2f} ms",
              f"the minimal handler: {grouped(limit)} requests/s, p99 {limit_p99:.2f} ms",
              "≥ 20 000/s, ≥ 60%, ≤ 10 ms", rate >= 20000 and rate >= 0.6 * rb and p99 <= 10,
              [grouped(rate), f"{rate / rb:.0%}", grouped(rb), f"{p99:.2f} ms", grouped(limit)],
              f"\"== {title}\", \"== {ceiling}\", \"== {minimal}\"")
    streams = r.rounds([f"realsyncd: 10 000 streams on one instance, 200 patches/s (round {n})" for n in (1, 2, 3)])
    saturated = "realsyncd: 10 000 streams on one instance, 1000 patches/s"
    baseline = "SSE baseline: minimal fan-out, 10 000 streams, 1000 publishes/s"
    delivered = r"delivered\s+(\d+) of (\d+) expected \((\d+) events/s\), (\d+) stream reconnects"
    whole = True
    for t in streams + [saturated]:
        m = re.search(delivered, r.i.secs.get(t, ""))
        if not m:
            sys.exit(f"{r.i.path}, \"== {t}\": no delivered line")
        whole = whole and m.group(1) == m.group(2) and m.group(4) == "0"
    r.add("issue 6", "10 000 concurrent streams on one instance, every event delivered, no reconnect",
          "every event delivered, no reconnect" if whole else "events lost or streams reconnected",
          "", "all", whole, [], ", ".join(f"\"== {t}\"" for t in streams + [saturated]))
    rate = r.value(saturated, r"\((\d+) events/s\)")
    base = r.value(baseline, r"\((\d+) events/s\)")
    r.add("issue 6", "delivered events a second at saturation",
          f"{grouped(rate)}/s, {rate / base:.1%} of the minimal fan-out's", f"the minimal fan-out: {grouped(base)}/s",
          "≥ 100 000/s", rate >= 100000, [grouped(rate), grouped(base), f"{rate / base:.1%}"],
          f"\"== {saturated}\", \"== {baseline}\"")
    p99s = [r.value(t, r"latency .*?p99 ([\d.]+) ms") for t in streams]
    sat99, base99 = r.value(saturated, r"latency .*?p99 ([\d.]+) ms"), r.value(baseline, r"latency .*?p99 ([\d.]+) ms")
    r.add("issue 6", "patch → event p99, below saturation (200 writes/s) and at saturation",
          f"{', '.join(f'{v:.2f}' for v in p99s)} ms; {sat99:.2f} ms at saturation",
          f"the minimal fan-out at saturation: {base99:.2f} ms", "≤ 50 ms",
          max(p99s + [sat99]) <= 50, [f"{v:.2f}" for v in p99s] + [f"{sat99:.2f} ms", f"{base99:.2f} ms"],
          ", ".join(f"\"== {t}\"" for t in streams + [saturated]))
    small, large = "lobby of 1 000 rooms: list + quick-join, 2 clients", "lobby of 100 000 rooms: list + quick-join, 2 clients"
    for op, name in (("list", "list"), ("quickjoin", "quick-join")):
        _, p50a, p99a = op_row(r, small, op)
        _, p50b, p99b = op_row(r, large, op)
        r.add("issue 6", f"lobby {name} p99 at 100 000 rooms (2 clients), and within 20% of 1 000 rooms'",
              f"{p99b:.2f} ms ({p99b / p99a - 1:+.0%} from {p99a:.2f} ms; p50 {p50b / p50a - 1:+.0%})", "",
              "≤ 5 ms, ≤ +20%", p99b <= 5 and p99b <= 1.2 * p99a,
              [f"{p99b:.2f} ms", f"{p99a:.2f}", f"{abs(p99b / p99a - 1):.0%}"], f"\"== {small}\", \"== {large}\"")
    mem = "Redis memory per idle 8-player room"
    without = r.value(mem, r"([\d.]+) bytes/room-without-log")
    in_all = r.value(mem, r"([\d.]+) bytes/idle-room-in-all")
    r.add("issue 6", "Redis memory per idle 8-player room without its log, and in all once its log is dropped",
          f"{grouped(without)} and {grouped(in_all)} bytes", "", "≤ 2 KiB, ≤ 2.5 KiB",
          without <= 2048 and in_all <= 2560, [f"{grouped(without)} bytes", f"{grouped(in_all)} bytes"], f"\"== {mem}\"")


def table_of_targets(issue):
    """BENCHMARKS.md's table of an issue's targets, as text."""
    with open(os.path.join(ROOT, "docs", "BENCHMARKS.md"), encoding="utf-8") as f:
        doc = f.read()
    head = f"| target (issue {issue}) |"
    start = doc.find(head)
    if start < 0:
        sys.exit(f"docs/BENCHMARKS.md has no table headed \"{head}\"")
    end = doc.find("\n\n", start)
    return doc[start:end if end > 0 else len(doc)]


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    if len(args) > 1:
        sys.exit(__doc__)
    log = args[0] if args else run_log()
    r = Rows(log)
    for item in (item1, item2, item3, item4, item5, item6, issue6):
        item(r)
    print(f"Issue 15's and issue 6's targets, from {os.path.relpath(log, ROOT)}" + (" (a smoke run: its figures mean nothing)" if r.i.smoke else ""))
    for item, what, figure, limit, target, met, _, source in r.rows:
        print(f"\n{'item ' if item[0].isdigit() else ''}{item}: {what} ({target})")
        print(f"  {'MET' if met else 'missed'}: {figure}")
        if limit:
            print(f"  limit: {limit}")
        print(f"  from {source}")
    if check:
        tables = {"15": table_of_targets(15), "6": table_of_targets(6)}
        missing = []
        for item, what, _, _, _, _, figures, _ in r.rows:
            issue = "6" if item == "issue 6" else "15"
            missing += [(issue, what, f) for f in figures if f not in tables[issue]]
        for issue, what, f in missing:
            print(f"docs/BENCHMARKS.md's table of issue {issue}'s targets lacks {f} ({what})", file=sys.stderr)
        if missing:
            sys.exit(1)
        print("\ndocs/BENCHMARKS.md's tables of issue 15's and issue 6's targets hold every figure above")


if __name__ == "__main__":
    main(sys.argv[1:])
