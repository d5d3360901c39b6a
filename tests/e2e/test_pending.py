# SPDX-License-Identifier: Apache-2.0
"""Pending visibility and the APF debug dumps (docs/visibility.md): requests
held waiting behind a slow backend, then the pendingrequests endpoint (order,
positions, filters, limit/offset, details, 400 and 404), fairgatectl pending
and dump, Kubernetes' dump_* tables, and hostile names escaped.  Every wait
and loop is bounded."""
import http.client
import json
import subprocess
import time
import urllib.parse

import fgtest as t

HOLD_US = 8_000_000  # the backend holds each executing request this long
API = "/apis/visibility.fairgate.io/v1/prioritylevels/"


def get(addr, path):
    """(status, headers, body) of a GET, bounded by a 10 s time-out."""
    host, port = addr.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode("utf-8", "replace")
    finally:
        c.close()


def ctl(d, *args):
    return subprocess.run([t.FAIRGATECTL, "--socket", d.sock] + list(args), capture_output=True, text=True,
                          timeout=20)


def pending(addr, level=t.TEST_LEVEL, query=""):
    st, hdr, body = get(addr, API + urllib.parse.quote(level, safe="") + "/pendingrequests" + query)
    return st, hdr, body


b_addr = f"127.0.0.1:{t.free_port()}"
b = t.backend(b_addr)
# One worker: the positions and which 2 requests execute are one queue set's.
d = t.Daemon([b_addr], ["--seat-limit", "2", "--queue-wait", "60s", "--backend-timeout", "60s", "--workers", "1"],
             level=dict(queues=16, hand=1, qll=100))
addr = d.http_address()

# 2 execute (held by the backend), the rest wait.
hostile = b"ev\xff\x1b[31m\"\\il\xe2\x80\xae"
users = [b"alice"] * 12 + [b"bob"] * 5 + [b"carol"] + [hostile] * 2
clients = []
for i, u in enumerate(users):
    s = t.udp_client()
    s.sendto(t.request(1000 + i, user=u, payload=t.service(HOLD_US)), ("127.0.0.1", d.port))
    clients.append(s)  # a burst: alice's backlog is ahead of R, so the others' heads come first
n_wait = len(users) - 2
st = d.wait_status(lambda s: t.level_of(s)["waiting"] == n_wait)
t.check(t.level_of(st)["waiting"] == n_wait, f"{n_wait} requests wait behind 2 seats")

code, hdr, body = pending(addr)
doc = json.loads(body) if code == 200 else {}
items = doc.get("items", [])
t.check(code == 200 and doc.get("kind") == "PendingRequestsSummary" and hdr.get("content-type") == "application/json",
        "pendingrequests: 200, PendingRequestsSummary")
t.check(len(items) == n_wait and doc["metadata"]["waiting"] == n_wait and doc["metadata"]["complete"],
        f"every waiting request listed ({len(items)})")
t.check([it["positionInPriorityLevel"] for it in items] == list(range(n_wait)), "positions 0..n-1 in order")
per_queue = {}
ok_q = True
for it in items:
    ok_q &= it["positionInQueue"] == per_queue.get(it["queue"], 0)
    per_queue[it["queue"]] = it["positionInQueue"] + 1
t.check(ok_q, "positions in each queue count up in dispatch order")
t.check(all(it["flowSchema"] == "everyone" for it in items), "flowSchema of every item")
# Fair order: bob and carol are not stuck behind alice's backlog.
first5 = [it["distinguisher"] for it in items[:5]]
t.check("carol" in first5 and "bob" in first5, f"fair order across queues, not arrival order: {first5}")
t.check(all(it["requestId"] >= 1000 and it["client"].startswith("127.0.0.1:") and it["waitedSeconds"] >= 0
            for it in items), "requestId, client and waitedSeconds")
ev = [it for it in items if it["distinguisher"].startswith("ev")]
t.check(len(ev) == 2 and "\x1b" not in ev[0]["distinguisher"] and "\u202e" not in body and "\x1b" not in body,
        f"a hostile distinguisher is escaped: {ev[0]['distinguisher'] if ev else None!r}")

code, _, body = pending(addr, query="?limit=3&offset=2")
doc = json.loads(body)
t.check(code == 200 and [it["positionInPriorityLevel"] for it in doc["items"]] == [2, 3, 4], "limit and offset")
code, _, body = pending(addr, query="?distinguisher=bob")
doc = json.loads(body)
t.check(code == 200 and doc["metadata"]["matched"] == 5 and all(it["distinguisher"] == "bob" for it in doc["items"]),
        "distinguisher filter before limit")
code, _, body = pending(addr, query="?flowSchema=everyone&distinguisher=alice&limit=2&offset=1")
doc = json.loads(body)
t.check(code == 200 and doc["metadata"]["matched"] == 10 and len(doc["items"]) == 2, "both filters, then the cut")
code, _, body = pending(addr, query="?flowSchema=nope")
t.check(code == 200 and json.loads(body)["items"] == [], "a filter matching nothing: no items")
code, _, body = pending(addr, query="?details=1&limit=1")
att = json.loads(body)["items"][0].get("attributes", {})
t.check(code == 200 and att.get("verb") == "get" and att.get("resource") == "pods", f"details: attributes {att}")

for q, why in [("?limit=0", "limit"), ("?limit=100001", "limit"), ("?limit=abc", "limit"), ("?offset=-1", "offset"),
               ("?foo=1", "unknown"), ("?limit=1&limit=2", "repeated"), ("?details=maybe", "details"),
               ("?flowSchema=%01x", "flowSchema"), ("?distinguisher=" + "x" * 600, "distinguisher"),
               ("?" + "&".join(f"a{i}=1" for i in range(20)), "too many")]:
    code, _, body = pending(addr, query=q)
    t.check(code == 400 and why in body and body.count("\n") == 1, f"400 for {q[:40]}: {body.strip()[:90]}")
code, _, body = pending(addr, level="nope")
t.check(code == 404 and json.loads(body)["code"] == 404, "unknown level: 404")
code, _, body = get(addr, API + "x" * 100 + "/pendingrequests")
t.check(code == 404, "a level name too long: 404")
code, _, body = get(addr, API + t.TEST_LEVEL + "/other")
t.check(code == 404, "another path under the API: 404")

# fairgatectl pending
p = ctl(d, "pending", t.TEST_LEVEL, "--limit", "2", "-o", "json")
doc = json.loads(p.stdout) if p.returncode == 0 else {}
t.check(p.returncode == 0 and len(doc.get("items", [])) == 2, "fairgatectl pending --limit 2 -o json")
p = ctl(d, "pending", t.TEST_LEVEL, "--distinguisher", "bob")
t.check(p.returncode == 0 and p.stdout.count(" bob ") == 5 and "POSITION" in p.stdout, "fairgatectl pending table")
p = ctl(d, "pending", "nope")
t.check(p.returncode == 1 and "no such priority level" in p.stderr, "fairgatectl pending: unknown level")
p = ctl(d, "pending", t.TEST_LEVEL, "--limit", "0")
t.check(p.returncode == 1 and "limit" in p.stderr, "fairgatectl pending: bad limit")
p = ctl(d, "pending")
t.check(p.returncode == 2, "fairgatectl pending without a level: usage")

# Kubernetes' dumps
code, _, body = get(addr, "/debug/api_priority_and_fairness/dump_priority_levels")
lines = body.splitlines()
t.check(code == 200 and lines[0].startswith("PriorityLevelName, ActiveQueues,") and "CancelledRequests" in lines[0],
        "dump_priority_levels header")
row = next((ln for ln in lines if ln.startswith(t.TEST_LEVEL + ",")), "")
cells = [c.strip() for c in row.split(",")]
t.check(len(cells) == 10 and cells[4] == str(n_wait) and cells[5] == "2" and cells[2] == "false",
        f"dump_priority_levels row: {cells}")
names = [ln.split(",")[0] for ln in lines[1:]]
t.check(names == sorted(names), "levels sorted by name")
code, _, body = get(addr, "/debug/api_priority_and_fairness/dump_queues")
qrows = [ln for ln in body.splitlines() if ln.startswith(t.TEST_LEVEL + ",")]
t.check(code == 200 and sum(int(r.split(",")[2]) for r in qrows) == n_wait and "ss," in qrows[0],
        "dump_queues: pending requests sum, R in seat-seconds")
t.check([int(r.split(",")[1]) for r in qrows] == list(range(16)), "dump_queues: every queue of the level, in order")
code, _, body = get(addr, "/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1")
rl = body.splitlines()
t.check(code == 200 and "FlowDistingsher" in rl[0] and "UserName" in rl[0] and
        len([ln for ln in rl if ln.startswith(t.TEST_LEVEL + ",")]) == len(users), "dump_requests with details")
t.check(sum(1 for ln in rl if ln.startswith(t.TEST_LEVEL + ",") and ln.split(",")[3].strip() == "-1") == 2,
        "executing requests at index -1")
t.check("\x1b" not in body and "\u202e" not in body and "\\x1b" in body, "dump_requests: the hostile name escaped")
col2 = {len(ln) - len(ln[ln.index(",") + 1:].lstrip(" ")) for ln in rl}
t.check(len(col2) == 1 and all("\t" not in ln for ln in rl), f"tabwriter: columns aligned with spaces ({col2})")
code, _, body = get(addr, "/debug/api_priority_and_fairness/dump_queues?x=1")
t.check(code == 400, "dump_queues takes no parameter")
p = ctl(d, "dump", "levels", "-o", "json")
rows = json.loads(p.stdout) if p.returncode == 0 else []
t.check(any(r.get("PriorityLevelName") == t.TEST_LEVEL and r.get("WaitingRequests") == n_wait for r in rows),
        "fairgatectl dump levels -o json")
p = ctl(d, "dump", "requests")
t.check(p.returncode == 0 and p.stdout.startswith("PriorityLevelName,"), "fairgatectl dump requests")

# The old paths still refuse parameters.
code, _, _ = get(addr, "/metrics?x=1")
t.check(code == 400, "/metrics still takes no parameter")

for s in clients:
    s.close()
rc, err = d.stop()
t.check(rc == 0, f"clean shutdown ({rc})")
t.finish()
