#!/usr/bin/env python3
"""Capacity model of docs/CAPACITY.md: what one instance, one Redis master
and a Cluster of N masters carry, from the per-operation costs of one run
of scripts/bench.sh. It reads that run's log (by default the one named on
the "Run:" line of docs/BENCHMARKS.md), prints every input with the log
section it comes from, then the tables the document quotes:

    python3 scripts/capacity.py [docs/bench/<run>.log]

No figure here is measured by this script; the assumptions (the game, the
headroom) are constants below: change one and run it again.
"""

import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Inputs a run's log may lack (bench.sh's "security" section is newer than
# some logs): the figure used instead, and where it comes from.
FALLBACK = {
    "ratelimit": (14.7, "not in this log: the run of 2026-11-23 (docs/PERFORMANCE-HISTORY.md, \"Security costs\": user + address)"),
    # 5.8 ms of Redis per renewal round of 1 000 leases with the default
    # stream cap (16), a round every 5 s
    "renew_per_stream": (1.16, "not in this log: the run of 2026-11-23 (docs/PERFORMANCE-HISTORY.md, \"Security costs\": 5.8 ms per round of 1 000 leases, cap 16)"),
}
RENEW_EVERY_S = 5.0     # a stream's presence lease is renewed every third of its 15 s TTL
RENEWAL_STREAMS = 1000  # BenchmarkRenewalRound's streams per round in logs without redis-µs/stream


def run_log():
    """The log named on docs/BENCHMARKS.md's "Run:" line."""
    with open(os.path.join(ROOT, "docs", "BENCHMARKS.md"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"Run: .*?(docs/bench/[\w.-]+\.log)", line)
            if m:
                return os.path.join(ROOT, m.group(1))
    sys.exit("docs/BENCHMARKS.md has no \"Run:\" line naming its log")


def sections(path):
    """The log's "== title" sections: {title: text}."""
    out, title, body = {}, None, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("== "):
                if title is not None:
                    out[title] = "".join(body)
                title, body = line[3:].strip(), []
            elif title is not None:
                body.append(line)
    if title is not None:
        out[title] = "".join(body)
    return out


class Inputs:
    def __init__(self, path):
        self.path, self.secs, self.source = path, sections(path), {}
        # a smoke run of bench.sh (REALSYNC_BENCH_SMOKE) runs the first of
        # each section's rounds only: its medians are of the rounds there
        with open(path, encoding="utf-8") as f:
            self.smoke = f.readline().startswith("# smoke run")

    def find(self, key, title, pattern, then=float):
        text = self.secs.get(title)
        if text is None:
            if key in FALLBACK:
                v, src = FALLBACK[key]
                self.source[key] = src
                return v
            sys.exit(f"{self.path}: no section \"== {title}\" (input {key})")
        m = re.search(pattern, text)
        if not m:
            sys.exit(f"{self.path}, \"== {title}\": no match for {pattern!r} (input {key})")
        v = then(float(m.group(1)))
        self.source[key] = f"\"== {title}\""
        return v

    def median(self, key, titles, pattern):
        titles, vals = self.each(key, titles, pattern)
        self.source[key] = "median of " + ", ".join(f"\"== {t}\"" for t in titles)
        return statistics.median(vals)

    def largest(self, key, titles, pattern):
        titles, vals = self.each(key, titles, pattern)
        self.source[key] = "largest of " + ", ".join(f"\"== {t}\"" for t in titles)
        return max(vals)

    def each(self, key, titles, pattern):
        """The titles read and their values: every one of titles, or in a
        smoke run's log those there (one at least)."""
        if self.smoke and any(t in self.secs for t in titles):
            titles = [t for t in titles if t in self.secs]
        vals = []
        for t in titles:
            if t not in self.secs:
                sys.exit(f"{self.path}: no section \"== {t}\" (input {key})")
            m = re.search(pattern, self.secs[t])
            if not m:
                sys.exit(f"{self.path}, \"== {t}\": no match for {pattern!r} (input {key})")
            vals.append(float(m.group(1)))
        return titles, vals


REDIS_PER_REQ = r"redis: .*?: ([\d.]+) µs CPU per request"
SERVER_PER_REQ = r"server CPU \(pid \d+\): ([\d.]+) µs/request"


def load(path):
    """Every measured input, from one run's log."""
    i = Inputs(path)
    redis, server = {}, {}
    # Per kind of request alone (bench.sh "capacity"): realsyncd on
    # standalone Redis, batching and the Functions library on, rate limits
    # and room quotas off, 32 clients, 5 s each. A join+leave churn counts a
    # join and a leave as two requests, a create+delete churn alike.
    for kind, mix in (("join", "join=1"), ("create", "create=1"), ("patch", "patch=1"),
                      ("get", "get=1"), ("list", "list=1")):
        t = "capacity input: " + mix
        redis[kind] = i.find("redis_" + kind, t, REDIS_PER_REQ)
        server[kind] = i.find("server_" + kind, t, SERVER_PER_REQ)
    redis["leave"], server["leave"] = redis["join"], server["join"]
    redis["delete"], server["delete"] = redis["create"], server["create"]
    # ESTIMATE: a message is a patch's shape (one event, one script)
    redis["message"], server["message"] = redis["patch"], server["patch"]
    i.source["message"] = "ESTIMATE: as a patch"
    # a benchmark's name ends in -GOMAXPROCS but on one CPU (the load
    # placed on one: REALSYNC_BENCH_LOAD_CPUS)
    redis["ratelimit"] = i.find("ratelimit", "security costs: the rate limiter's check",
                                r"BenchmarkRateLimit/user\+ip(?:-\d+)?\s.*?([\d.]+) redis-µs/op")
    # per stream as the benchmark reports it (a smoke run renews 100
    # streams a round, a full one 1 000); a log from before that metric is
    # a full run's, its round divided by its 1 000 streams
    renewal = "security costs: lease renewal rounds, holdings release"
    if re.search(r"redis-µs/stream", i.secs.get(renewal, "")):
        redis["renew_per_stream"] = i.find(
            "renew_per_stream", renewal,
            r"BenchmarkRenewalRound/cap=16(?:-\d+)?\s.*?([\d.]+) redis-µs/stream",
            then=lambda us: us / RENEW_EVERY_S)
    else:
        redis["renew_per_stream"] = i.find(
            "renew_per_stream", renewal,
            r"BenchmarkRenewalRound/cap=16(?:-\d+)?\s.*?([\d.]+) redis-µs/round",
            then=lambda us: us / RENEWAL_STREAMS / RENEW_EVERY_S)
    # one event delivered to one stream: realsyncd's CPU per event, 2 000
    # streams, 100 patches/s, 3 rounds alternating with the baseline
    server["event"] = i.median("event", [f"realsyncd: CPU per event, 2 000 streams, 100 patches/s (round {r})" for r in (1, 2, 3)],
                               r"server CPU .*?: ([\d.]+) µs per event delivered")
    server["ping"] = 20.0  # ESTIMATE: a heartbeat comment written to one stream
    i.source["ping"] = "ESTIMATE: a heartbeat comment written to one stream"
    t10k = "realsyncd: 10 000 streams on one instance, 200 patches/s"
    # planned at the burst figure (2 s after 10 000 streams opened at once):
    # a reconnect storm after an instance dies is a burst. Logs since
    # 2026-12-03 run it in 3 rounds, the first watching the settled figure:
    # the largest round's burst figure is planned for.
    rounds = [f"{t10k} (round {r})" for r in (1, 2, 3)]
    if t10k in i.secs:
        stream_kib = i.find("stream_kib", t10k, r"with them idle: ([\d.]+) KiB per stream")
        settled_kib = i.find("settled_kib", t10k, r"settled RSS .*?: ([\d.]+) KiB per stream")
    else:
        stream_kib = i.largest("stream_kib", rounds, r"with them idle: ([\d.]+) KiB per stream")
        settled_kib = i.find("settled_kib", rounds[0], r"settled RSS .*?: ([\d.]+) KiB per stream")
    tm = "Redis memory per idle 8-player room"
    room = i.find("room_bytes", tm, r"([\d.]+) bytes/idle-room-in-all")  # log dropped by the janitor
    log_event = i.find("log_event_bytes", tm, r"([\d.]+) log-bytes/event")
    log_first = i.find("log_first_node", tm, r"([\d.]+) log-bytes/room")  # a log of 8 events: its first node whole
    return i, redis, server, stream_kib, settled_kib, room, log_event, log_first


LOG_EVENTS_KEPT = 1000  # the log keeps about the last 1 000 events (256 KiB cap)

# --- machine and headroom assumptions ----------------------------------------
REDIS_BUSY = 0.6        # a Redis master is planned at 60% of its core (failover, spikes, BGSAVE)
INSTANCE_CORES = 4
INSTANCE_BUSY = 0.6
INSTANCE_RAM_GIB = 8
INSTANCE_RAM_BUSY = 0.7
REDIS_RAM_GIB = 25      # maxmemory of one master (a 32 GiB node)

# --- workload of a session-based game ----------------------------------------
PLAYERS = 1_000_000
SEATS = 8               # players per room (rooms full on average)
SESSION_S = 20 * 60     # a player stays in a room 20 minutes, then leaves
PATCHES_PER_ROOM_S = 1.0
MESSAGES_PER_ROOM_S = 0.2
GETS_PER_PLAYER_S = 1 / 300    # a room read every 5 minutes (resync, UI)
LISTS_PER_PLAYER_S = 1 / 600   # a lobby page every 10 minutes
HEARTBEAT_S = 15
LOG_MINUTES_ACTIVE = 20        # a room's log fills for a session


def workload(players):
    rooms = players / SEATS
    joins = players / SESSION_S
    rates = {
        "join": joins, "leave": joins,
        "create": joins / SEATS, "delete": joins / SEATS,
        "patch": rooms * PATCHES_PER_ROOM_S,
        "message": rooms * MESSAGES_PER_ROOM_S,
        "get": players * GETS_PER_PLAYER_S,
        "list": players * LISTS_PER_PLAYER_S,
    }
    requests = sum(rates.values())
    events = (rates["patch"] + rates["message"]) * SEATS + (joins * 2 + rates["create"] + rates["delete"]) * SEATS
    return rooms, rates, requests, events


def fmt(x):
    if x >= 100:
        return f"{x:,.0f}".replace(",", " ")
    return f"{x:.2g}" if x < 10 else f"{x:.0f}"


def main():
    global REDIS_US, SERVER_US, STREAM_KIB, ROOM_BYTES, LOG_EVENT_BYTES, LOG_FIRST_NODE
    path = sys.argv[1] if len(sys.argv) > 1 else run_log()
    inp, REDIS_US, SERVER_US, STREAM_KIB, settled, ROOM_BYTES, LOG_EVENT_BYTES, LOG_FIRST_NODE = load(path)
    print(f"Inputs, from {os.path.relpath(path, ROOT)}:")
    print()
    print("| input | value | from |")
    print("|---|---|---|")
    for k in ("join", "create", "patch", "get", "list"):
        print(f"| {k}: Redis CPU / realsyncd CPU per request | {REDIS_US[k]:.1f} / {SERVER_US[k]:.1f} µs | {inp.source['redis_' + k]} |")
    print(f"| message | as a patch | {inp.source['message']} |")
    print(f"| rate limiter, Redis per request (user + address) | {REDIS_US['ratelimit']:.1f} µs | {inp.source['ratelimit']} |")
    print(f"| lease renewal, Redis per stream and second | {REDIS_US['renew_per_stream']:.2f} µs | {inp.source['renew_per_stream']} |")
    print(f"| realsyncd CPU per event delivered to a stream | {SERVER_US['event']:.1f} µs | {inp.source['event']} |")
    print(f"| realsyncd CPU per heartbeat | {SERVER_US['ping']:.1f} µs | {inp.source['ping']} |")
    print(f"| resident memory per stream (2 s after 10 000 opened; settled: {settled:.1f} KiB) | {STREAM_KIB:.1f} KiB | {inp.source['stream_kib']} |")
    print(f"| Redis memory per idle 8-player room (log dropped) | {ROOM_BYTES:.0f} bytes | {inp.source['room_bytes']} |")
    print(f"| a log: per event / a log of 8 events | {LOG_EVENT_BYTES:.1f} / {LOG_FIRST_NODE:.0f} bytes | {inp.source['log_event_bytes']} |")
    print()
    print("| players | rooms | requests/s | of which joins/s | events delivered/s | Redis CPU (cores) | Redis masters at 60% | realsyncd cores | instances (CPU) | instances (stream memory) | Redis memory |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for players in (10_000, 100_000, 1_000_000):
        rooms, rates, requests, events = workload(players)
        redis_us = sum(rates[k] * REDIS_US[k] for k in rates) + requests * REDIS_US["ratelimit"] + players * REDIS_US["renew_per_stream"]
        server_us = sum(rates[k] * SERVER_US[k] for k in rates) + events * SERVER_US["event"] + players / HEARTBEAT_S * SERVER_US["ping"]
        redis_cores = redis_us / 1e6
        masters = redis_cores / REDIS_BUSY
        server_cores = server_us / 1e6
        inst_cpu = server_cores / (INSTANCE_CORES * INSTANCE_BUSY)
        inst_mem = players * STREAM_KIB / (INSTANCE_RAM_GIB * 1024 * 1024 * INSTANCE_RAM_BUSY)
        log_events = min(LOG_EVENTS_KEPT, (PATCHES_PER_ROOM_S + MESSAGES_PER_ROOM_S) * LOG_MINUTES_ACTIVE * 60)
        mem = rooms * (ROOM_BYTES + LOG_FIRST_NODE + log_events * LOG_EVENT_BYTES)
        print(f"| {fmt(players)} | {fmt(rooms)} | {fmt(requests)} | {fmt(rates['join'])} | {fmt(events)} | "
              f"{redis_cores:.2f} | {max(1, masters):.1f} | {server_cores:.2f} | {max(1, inst_cpu):.1f} | {max(1, inst_mem):.1f} | "
              f"{mem / 2**30:.1f} GiB |")
    print()
    print("What one unit carries under this workload (players, and what they make):")
    print()
    rooms1, rates1, req1, ev1 = workload(1)  # per player
    redis_pp = (sum(rates1[k] * REDIS_US[k] for k in rates1) + req1 * REDIS_US["ratelimit"] + REDIS_US["renew_per_stream"]) / 1e6
    server_pp = (sum(rates1[k] * SERVER_US[k] for k in rates1) + ev1 * SERVER_US["event"] + SERVER_US["ping"] / HEARTBEAT_S) / 1e6
    log_events = min(LOG_EVENTS_KEPT, (PATCHES_PER_ROOM_S + MESSAGES_PER_ROOM_S) * LOG_MINUTES_ACTIVE * 60)
    mem_pp = (ROOM_BYTES + LOG_FIRST_NODE + log_events * LOG_EVENT_BYTES) / SEATS
    master_cpu = REDIS_BUSY / redis_pp
    master_mem = REDIS_RAM_GIB * 2**30 / mem_pp
    inst_cpu = INSTANCE_CORES * INSTANCE_BUSY / server_pp
    inst_mem = INSTANCE_RAM_GIB * 2**20 * INSTANCE_RAM_BUSY / STREAM_KIB
    print("| unit | players (bound by) | rooms | joins/s | streams | events delivered/s | memory |")
    print("|---|---|---|---|---|---|---|")
    p = min(inst_cpu, inst_mem)
    print(f"| one instance ({INSTANCE_CORES} cores, {INSTANCE_RAM_GIB} GiB) | {fmt(p)} ({'CPU' if inst_cpu < inst_mem else 'stream memory'}; "
          f"{fmt(inst_cpu)} by CPU, {fmt(inst_mem)} by memory) | — | {fmt(p / SESSION_S)} | {fmt(p)} | {fmt(p * ev1)} | {fmt(p * STREAM_KIB / 2**20)} GiB of streams |")
    p = min(master_cpu, master_mem)
    print(f"| one Redis master (1 core at {REDIS_BUSY:.0%}, {REDIS_RAM_GIB} GiB) | {fmt(p)} ({'CPU' if master_cpu < master_mem else 'memory'}; "
          f"{fmt(master_cpu)} by CPU, {fmt(master_mem)} by memory) | {fmt(p / SEATS)} | {fmt(p / SESSION_S)} | — | {fmt(p * ev1)} published to streams | {p * mem_pp / 2**30:.1f} GiB |")
    for n in (3, 6, 12, 24):
        q = n * min(master_cpu, master_mem)
        print(f"| a Cluster of {n} masters | {fmt(q)} | {fmt(q / SEATS)} | {fmt(q / SESSION_S)} | — | {fmt(q * ev1)} | {q * mem_pp / 2**30:.1f} GiB |")
    print()
    print("Per player and second (what the reading of docs/CAPACITY.md quotes):")
    print()
    parts = {k: rates1[k] * REDIS_US[k] for k in rates1}
    parts["rate limiter"] = req1 * REDIS_US["ratelimit"]
    parts["lease renewals"] = REDIS_US["renew_per_stream"]
    total = sum(parts.values())
    print(f"- Redis: {total:.2f} µs: " + ", ".join(
        f"{k} {v:.2f} ({v / total:.0%})" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])))
    srv_req = sum(rates1[k] * SERVER_US[k] for k in rates1)
    srv_ev = ev1 * SERVER_US["event"]
    srv_ping = SERVER_US["ping"] / HEARTBEAT_S
    print(f"- realsyncd: {srv_req + srv_ev + srv_ping:.1f} µs: events delivered {srv_ev:.1f} ({ev1:.2f} events), "
          f"requests {srv_req:.1f}, heartbeats {srv_ping:.1f}")
    print(f"- stream memory: {inst_mem:,.0f} streams in {INSTANCE_RAM_GIB} GiB at {INSTANCE_RAM_BUSY:.0%} at the burst figure".replace(",", " "))
    print()
    print("Per master at 60% of its core (one operation kind alone):")
    print()
    print("| operation | Redis µs | per master/s |")
    print("|---|---|---|")
    for k in ("join", "leave", "create", "patch", "message", "get", "list"):
        per = REDIS_US[k] + REDIS_US["ratelimit"]
        print(f"| {k} (+ rate limit) | {per:.1f} | {fmt(REDIS_BUSY * 1e6 / per)} |")


if __name__ == "__main__":
    main()
