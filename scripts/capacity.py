#!/usr/bin/env python3
"""Capacity model of docs/CAPACITY.md: what one instance, one Redis master
and a Cluster of N masters carry, from the per-operation costs measured in
docs/BENCHMARKS.md. Every input is below with the section it comes from;
change one and run `python3 scripts/capacity.py` to print the tables the
document quotes. No figure here is measured by this script.
"""

# --- measured per-operation costs (docs/BENCHMARKS.md) -----------------------
# From one run of `scripts/bench.sh capacity` (docs/CAPACITY.md quotes it):
# realsyncd on standalone Redis, batching and the Functions library on, rate
# limits and room quotas off, 32 clients, 5 s per kind of request.
# Redis CPU per request, µs: used_cpu_user + used_cpu_sys of redis-server
# over the run / requests (`rsload -redis`).
REDIS_US = {
    "join": 66.8,       # join+leave churn, per request (a join or a leave)
    "leave": 66.8,
    "create": 111.4,    # create+delete churn, per request
    "delete": 111.4,
    "patch": 40.5,      # one-key state patch
    "message": 40.5,    # ESTIMATE: a message is a patch's shape (one event, one script)
    "get": 31.7,        # GET room
    "list": 66.5,       # GET /v1/rooms, a joinable fill-order page of 20
    "ratelimit": 14.7,  # the limiter per request (user + address): "Security costs"
    "renew_per_stream": 0.6,  # presence renewal, per stream per second: "Security costs"
}
# realsyncd CPU per request, µs (/proc utime + stime / requests: `rsload -cpu-pid`).
SERVER_US = {
    "join": 115.4, "leave": 115.4, "create": 149.9, "delete": 149.9,
    "patch": 111.3, "message": 111.3,  # message: ESTIMATE, as a patch
    "get": 103.0, "list": 181.1,
    "event": 32.0,      # one event delivered to one stream ("Live events (SSE)": CPU per event delivered)
    "ping": 20.0,       # ESTIMATE: a heartbeat comment written to one stream
}
STREAM_KIB = 53.5       # resident memory per stream 2 s after 10 000 opened at once (settled: 11.5 KiB);
                        # planned at the burst figure: a reconnect storm after an instance dies is a burst
ROOM_BYTES = 2226       # Redis memory per idle 8-player room, log dropped ("Redis memory")
LOG_EVENT_BYTES = 190   # per event kept in a room's log
LOG_FIRST_NODE = 4768   # a log of a few events (first stream node allocated whole)
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
    print("Per master at 60% of its core (one operation kind alone):")
    print()
    print("| operation | Redis µs | per master/s |")
    print("|---|---|---|")
    for k in ("join", "leave", "create", "patch", "message", "get", "list"):
        per = REDIS_US[k] + REDIS_US["ratelimit"]
        print(f"| {k} (+ rate limit) | {per:.1f} | {fmt(REDIS_BUSY * 1e6 / per)} |")


if __name__ == "__main__":
    main()
