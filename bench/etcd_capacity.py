#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What an etcd on this machine sustains of the cluster exchange's requests
(docs/scale-out.md, "Scale model"), through the v3 JSON gateway that fairgate
uses: puts of one member's demand value (K levels) and range reads of the
cluster prefix holding 2N keys of K entries each (N members' demands and
grants).  Starts its own single-member etcd on loopback (tests/e2e/etcdtest.py:
temporary data directory, removed at exit), then for each workload runs
CLIENTS threads, each with one keep-alive connection, for SECONDS, RUNS times,
and prints one JSON line per workload with the requests/s of every run, their
min and median.  Python clients on a small machine: a lower bound on etcd's
capacity, not its ceiling.

  python3 bench/etcd_capacity.py put:8 range:10:8 --clients 16 --seconds 5 --runs 5

Workloads: put:K (a K-level demand record to one of 1000 member keys) and
range:N:K (the whole prefix, 2N keys of K levels; valueBytes: their mean size)."""
import argparse
import base64
import http.client
import json
import os
import statistics
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import etcdtest  # noqa: E402

PREFIX = "/fairgate/capacity/"
MAX_SECONDS, MAX_RUNS, MAX_CLIENTS, MAX_MEMBERS, MAX_LEVELS = 60, 20, 256, 1000, 128
PUT_KEYS = 1000


def level_name(i):
    return f"workload-{i:04d}"  # 13 characters, as "workload-high"


def demand_value(levels):
    """A demand record as control/cluster.c writes it: the configuration
    generation, and per level its limit and smoothed demand (a double)."""
    return json.dumps({"generation": 7, "levels": {level_name(i): {"limit": 128, "demand": 12.345678901234567}
                                                   for i in range(levels)}}, separators=(",", ":"))


def grant_value(levels):
    """A grant record: seats per level."""
    return json.dumps({"levels": {level_name(i): 42 for i in range(levels)}}, separators=(",", ":"))


def b64(text):
    return base64.b64encode(text.encode()).decode()


def parse(spec):
    parts = spec.split(":")
    try:
        if parts[0] == "put" and len(parts) == 2:
            kind, members, levels = "put", 0, int(parts[1])
        elif parts[0] == "range" and len(parts) == 3:
            kind, members, levels = "range", int(parts[1]), int(parts[2])
        else:
            raise ValueError
    except ValueError:
        sys.exit(f"etcd_capacity: workload {spec!r} is not put:K or range:N:K")
    if not (1 <= levels <= MAX_LEVELS) or (kind == "range" and not 1 <= members <= MAX_MEMBERS):
        sys.exit(f"etcd_capacity: {spec!r}: K 1..{MAX_LEVELS}, N 1..{MAX_MEMBERS}")
    return kind, members, levels


def load_prefix(etcd, members, levels):
    """The prefix holds exactly 2N keys: each member's demand and grant."""
    end = PREFIX[:-1] + chr(ord(PREFIX[-1]) + 1)
    etcd.call("/v3/kv/deleterange", {"key": b64(PREFIX), "range_end": b64(end)})
    values = {"demand": b64(demand_value(levels)), "grant": b64(grant_value(levels))}
    for m in range(members):
        for kind, value in values.items():
            etcd.call("/v3/kv/put", {"key": b64(f"{PREFIX}{kind}/member-{m:04d}"), "value": value})


def run_once(etcd, kind, levels, clients, seconds):
    """Requests/s over `seconds` from `clients` threads; an error ends the run as a failure."""
    if kind == "put":
        value = b64(demand_value(levels))
        path = "/v3/kv/put"
        bodies = [json.dumps({"key": b64(f"{PREFIX}demand/member-{i:04d}"), "value": value}).encode()
                  for i in range(PUT_KEYS)]
    else:
        end = PREFIX[:-1] + chr(ord(PREFIX[-1]) + 1)
        path = "/v3/kv/range"
        bodies = [json.dumps({"key": b64(PREFIX), "range_end": b64(end)}).encode()]
    done = [0] * clients
    errors = []
    stop_at = time.time() + seconds

    def client(idx):
        conn = http.client.HTTPConnection("127.0.0.1", etcd.client_port, timeout=etcdtest.HTTP_TIMEOUT_S)
        n = 0
        try:
            while time.time() < stop_at:
                conn.request("POST", path, bodies[(idx + n * clients) % len(bodies)],
                             {"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                if r.status != 200:
                    raise RuntimeError(f"HTTP {r.status}")
                n += 1
        except (OSError, RuntimeError, http.client.HTTPException) as e:
            errors.append(str(e))
        finally:
            conn.close()
        done[idx] = n

    start = time.time()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(seconds + 2 * etcdtest.HTTP_TIMEOUT_S)
    if errors:
        raise RuntimeError(f"{len(errors)} client(s) failed: {errors[0]}")
    return sum(done) / (time.time() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workloads", nargs="+", help="put:K or range:N:K")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    if not (1 <= a.clients <= MAX_CLIENTS and 0 < a.seconds <= MAX_SECONDS and 1 <= a.runs <= MAX_RUNS):
        sys.exit(f"etcd_capacity: --clients 1..{MAX_CLIENTS}, --seconds up to {MAX_SECONDS}, --runs 1..{MAX_RUNS}")
    specs = [parse(w) for w in a.workloads]
    etcd = etcdtest.Etcd(name="capacity")
    for spec, (kind, members, levels) in zip(a.workloads, specs):
        if kind == "range":
            load_prefix(etcd, members, levels)
        rates = [run_once(etcd, kind, levels, a.clients, a.seconds) for _ in range(a.runs)]
        body = len(demand_value(levels)) + (len(grant_value(levels)) if kind == "range" else 0)
        print(json.dumps({"workload": spec, "clients": a.clients, "seconds": a.seconds,
                          "valueBytes": body if kind == "put" else body // 2,
                          "keysPerRequest": 2 * members if kind == "range" else 1,
                          "perSecond": [round(r) for r in rates], "min": round(min(rates)),
                          "median": round(statistics.median(rates))}), flush=True)
    etcd.remove()


if __name__ == "__main__":
    main()
