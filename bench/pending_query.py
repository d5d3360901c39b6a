# SPDX-License-Identifier: Apache-2.0
"""The pendingrequests query against a real daemon holding N waiting requests
(docs/benchmarks.md): one seat held by a request the backend keeps for 10
minutes, N - 1 more from 500 users waiting behind it, then five timed GETs
with limit=1000 and five with limit=100000.

    FAIRGATE_BUILD=build python3 bench/pending_query.py [N]
"""
import http.client
import json
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
os.environ.setdefault("FAIRGATE_BUILD", os.path.join(HERE, "..", "build"))
import fgtest as t  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
b_addr = f"127.0.0.1:{t.free_port()}"
b = t.backend(b_addr)
d = t.Daemon([b_addr], ["--seat-limit", "1", "--queue-wait", "600s", "--backend-timeout", "600s",
                        "--max-requests", str(N + N // 5)], level=dict(queues=128, hand=6, qll=max(50, N // 50)))
addr = d.http_address()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
s.bind(("127.0.0.1", 0))
s.sendto(t.request(1, user=b"first", payload=t.service(600_000_000)), ("127.0.0.1", d.port))
time.sleep(0.2)
sent = 1
for i in range(2, N + 1):
    s.sendto(t.request(i, user=b"u%d" % (i % 500)), ("127.0.0.1", d.port))
    sent += 1
    if i % 2000 == 0:
        time.sleep(0.02)  # let the worker keep up (no drops in the socket buffer)
st = d.wait_status(lambda x: t.level_of(x)["waiting"] >= N - 1 - 10, timeout=60)
waiting = t.level_of(st)["waiting"]
print("waiting", waiting)
host, port = addr.rsplit(":", 1)
for limit in (1000, 100000):
    for run in range(5):
        c = http.client.HTTPConnection(host, int(port), timeout=20)
        t0 = time.monotonic()
        c.request("GET", f"/apis/visibility.fairgate.io/v1/prioritylevels/{t.TEST_LEVEL}/pendingrequests?limit={limit}")
        r = c.getresponse()
        body = r.read()
        dt = time.monotonic() - t0
        c.close()
        doc = json.loads(body)
        print(f"limit={limit} run={run} status={r.status} items={len(doc['items'])} waiting={doc['metadata']['waiting']} "
              f"complete={doc['metadata']['complete']} bytes={len(body)} seconds={dt:.3f}", flush=True)
d.stop(timeout=5)
t.cleanup()
