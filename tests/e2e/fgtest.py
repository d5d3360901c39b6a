# SPDX-License-Identifier: Apache-2.0
"""Helpers for fairgate's end-to-end tests: start real processes on loopback
(or inside a network namespace the test creates), speak the wire protocol,
read status through fairgatectl.  Every wait is bounded."""
import atexit
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback

BUILD = os.environ.get("FAIRGATE_BUILD", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
FAIRGATE = os.path.join(BUILD, "dataplane", "fairgate")
FAIRGATECTL = os.path.join(BUILD, "control", "fairgatectl")
BENCH = os.path.join(BUILD, "bench", "fairgate-bench")
# The sanitizer pass (tests/run.sh sets ASAN_OPTIONS) runs an unoptimised,
# instrumented build with meson's --timeout-multiplier 3: a latency bound a
# test checks is scaled the same way (what it proves is that the answer
# comes, not how fast a debug build gives it).
SLOWDOWN = 3 if os.environ.get("ASAN_OPTIONS") else 1
# FG_TEST_WORKERS=N: every socket-mode daemon a test starts without its own
# worker count runs N workers (tests/meson.build runs some tests so again).
WORKERS = int(os.environ.get("FG_TEST_WORKERS", "1"))

REASONS = ["none", "queue-full", "concurrency-limit", "time-out", "invalid", "no-backend",
           "backend-timeout", "shutting-down", "retry-with-cookie"]
RESPONSE, REJECT = 2, 3
RETRY_WITH_COOKIE = 8
ATTR_COOKIE, ATTR_PADDING = 10, 0xfffe

_failures = []
_procs = []


def _on_sigterm(signum, frame):
    """meson's test timeout sends SIGTERM: say where the test was, then
    unwind, so that its finally blocks and cleanup() stop the daemons and
    remove the network namespaces it made (the default action left both)."""
    sys.stderr.write("fgtest: SIGTERM (the test's timeout?), the test was at:\n")
    traceback.print_stack(frame, file=sys.stderr)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second one ends it at once
    raise SystemExit(1)


signal.signal(signal.SIGTERM, _on_sigterm)
# A test that dies of an exception still stops what it started.
atexit.register(lambda: cleanup())


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        _failures.append(what)


def finish():
    cleanup()
    n_checks = len(_failures)
    print(f"{'FAILED' if n_checks else 'PASSED'}: {n_checks} failed check(s)")
    sys.exit(1 if n_checks else 0)


def cleanup():
    for p in _procs:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
    _procs.clear()


_ports_given = set()


def free_port(kind=socket.SOCK_DGRAM):
    """A loopback port (UDP, or TCP with kind=socket.SOCK_STREAM) nothing
    holds now and that this test has not been given before: the kernel may
    hand the same ephemeral port to two binds in a row once the first
    socket is closed (CI saw two backends get one address)."""
    for _ in range(1000):
        s = socket.socket(socket.AF_INET, kind)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        if port not in _ports_given:
            _ports_given.add(port)
            return port
    raise RuntimeError("no fresh loopback port after 1000 tries")


def spawn(args, netns=None, **kw):
    if netns:
        args = ["ip", "netns", "exec", netns] + args
    p = subprocess.Popen(args, stdout=kw.pop("stdout", subprocess.PIPE),
                         stderr=kw.pop("stderr", subprocess.PIPE), text=True, **kw)
    _procs.append(p)
    return p


def _reachable_by_others(path):
    """Whether a uid other than the owner may execute path: the file and
    every directory above it are open to others (a clone under root's 0700
    home is not)."""
    path = os.path.realpath(path)
    if not os.stat(path).st_mode & 0o001:
        return False
    d = os.path.dirname(path)
    while True:
        if not os.stat(d).st_mode & 0o001:
            return False
        if d == "/":
            return True
        d = os.path.dirname(d)


_copies_dir = None


def executable_for_other_uid(path):
    """path if another uid (65534 in the access tests) can run it, else a
    copy in a temporary directory open to everyone, removed at exit."""
    global _copies_dir
    if _reachable_by_others(path):
        return path
    if _copies_dir is None:
        _copies_dir = tempfile.mkdtemp(prefix="fgtest-bin-")
        os.chmod(_copies_dir, 0o755)
        atexit.register(shutil.rmtree, _copies_dir, True)
    copy = os.path.join(_copies_dir, os.path.basename(path))
    if not os.path.exists(copy):
        shutil.copy(path, copy)
        os.chmod(copy, 0o755)
    return copy


def http_raw(addr, raw, timeout=5.0, source=None):
    """Send raw bytes to "HOST:PORT" on a new connection (from source's
    address when given) and read until the server closes or the time is up:
    (status or None, headers dict, body text, seconds)."""
    host, port = addr.rsplit(":", 1)
    data = b""
    t0 = time.time()
    try:
        with socket.create_connection((host, int(port)), timeout=timeout,
                                      source_address=(source, 0) if source else None) as s:
            s.sendall(raw)
            while time.time() - t0 < timeout:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError:
        pass
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/1\.[01] (\d+)", lines[0]) if lines and lines[0] else None
    headers = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        headers[k.strip().lower()] = v.strip()
    return (int(m.group(1)) if m else None), headers, body.decode("utf-8", "replace"), time.time() - t0


_HTTP_GET = r"""
import sys, urllib.error, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=float(sys.argv[2])) as r:
        code, body = r.status, r.read()
except urllib.error.HTTPError as e:
    code, body = e.code, e.read()
sys.stdout.write(f"{code}\n")
sys.stdout.flush()
sys.stdout.buffer.write(body)
"""


def http_get(url, netns=None, timeout=5):
    """(status, body) of one GET through Python's own HTTP client, run inside
    netns when given; (None, why) when no answer came."""
    args = [sys.executable, "-c", _HTTP_GET, url, str(timeout)]
    if netns:
        args = ["ip", "netns", "exec", netns] + args
    p = subprocess.run(args, capture_output=True, timeout=timeout + 20)
    if p.returncode != 0:
        return None, p.stderr.decode(errors="replace").strip()[-300:]
    head, _, body = p.stdout.partition(b"\n")
    return int(head), body.decode(errors="replace")


TEST_LEVEL = "tests"


def level_config(queues=64, hand=6, qll=50):
    """One priority level that every request reaches (ByUser flows), with
    1000 shares against catch-all's 5: its limit is the server limit for any
    limit under 200 seats."""
    return f"""apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {{name: {TEST_LEVEL}}}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1000
    limitResponse:
      type: Queue
      queuing: {{queues: {queues}, handSize: {hand}, queueLengthLimit: {qll}}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {{name: everyone}}
spec:
  priorityLevelConfiguration: {{name: {TEST_LEVEL}}}
  matchingPrecedence: 500
  distinguisherMethod: {{type: ByUser}}
  rules:
  - subjects: [{{kind: Group, group: {{name: "*"}}}}]
    resourceRules: [{{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}}]
    nonResourceRules: [{{verbs: ["*"], nonResourceURLs: ["*"]}}]
"""


def level_of(st, name=TEST_LEVEL):
    return next(l for l in st["priorityLevels"] if l["name"] == name)


class Daemon:
    """A fairgate process with its own port and control socket, configured
    with one test level (level=dict(queues, hand, qll)) unless config= gives
    the configuration text (None: the embedded bootstrap objects).  Its HTTP
    endpoint asks for any free loopback port (--http 127.0.0.1:0) unless
    extra gives --http, so parallel tests never collide on 9400."""

    def __init__(self, backends, extra=(), listen_ip="127.0.0.1", netns=None, eal=None, port=None,
                 level=None, config="", log=None):
        """log: a file for the daemon's output (a long run would fill an unread pipe)."""
        self.port = port or free_port()
        self.addr = f"{listen_ip}:{self.port}"
        self.sock = tempfile.mktemp(prefix="fg-", suffix=".sock", dir="/tmp")
        args = [FAIRGATE, "--listen", self.addr, "--control-socket", self.sock] + list(extra)
        if "--http" not in extra:
            args += ["--http", "127.0.0.1:0"]
        if config == "":
            config = level_config(**(level or {}))
        if config is not None:
            self.config_path = self.sock + ".yaml"
            with open(self.config_path, "w") as f:
                f.write(config)
            args += ["--config", self.config_path]
        for b in backends:
            args += ["--backend", b]
        if WORKERS > 1 and not eal and "--workers" not in extra and "workers:" not in (config or ""):
            args += ["--workers", str(WORKERS)]
        if eal:
            args += ["--io", "dpdk", "--"] + eal
        out = open(log, "w") if log else subprocess.PIPE
        self.proc = spawn(args, netns=netns, stdout=out, stderr=subprocess.STDOUT if log else subprocess.PIPE)
        deadline = time.time() + 20
        while time.time() < deadline and not os.path.exists(self.sock):
            if self.proc.poll() is not None:
                raise RuntimeError("fairgate exited: " + (open(log).read() if log else self.proc.stderr.read()))
            time.sleep(0.05)
        if not os.path.exists(self.sock):
            raise RuntimeError("fairgate did not start")
        # The socket's file appears at bind(), a moment before listen().
        while time.time() < deadline:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                try:
                    s.connect(self.sock)
                    break
                except OSError:
                    time.sleep(0.02)

    def status(self):
        out = subprocess.run([FAIRGATECTL, "--socket", self.sock, "status", "-o", "json"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode != 0:
            raise RuntimeError("fairgatectl: " + out.stderr)
        return json.loads(out.stdout)

    def http_address(self):
        """The HTTP endpoint's bound "ADDR:PORT" (status), or "off"."""
        return self.status()["http"]

    def wait_status(self, pred, timeout=5):
        """Status until pred(status) holds (workers follow a new configuration
        at their next poll, after apply has answered); the last one otherwise."""
        deadline = time.time() + timeout
        st = self.status()
        while not pred(st) and time.time() < deadline:
            time.sleep(0.05)
            st = self.status()
        return st

    def wait_idle(self, timeout=10):
        """Wait until nothing waits or executes; returns the last status."""
        deadline = time.time() + timeout
        st = self.status()
        while time.time() < deadline:
            if all(lv["waiting"] == 0 and lv["executing"] == 0 for lv in st["priorityLevels"]):
                break
            time.sleep(0.05)
            st = self.status()
        return st

    def stop(self, timeout=20):
        self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            return None, err
        return self.proc.returncode, err


def backend(addr, workers=4, netns=None, extra=(), duration="120s"):
    p = spawn([BENCH, "backend", "--listen", addr, "--workers", str(workers), "--duration", duration] + list(extra),
              netns=netns)
    time.sleep(0.2)
    return p


def loadgen_start(target, flows, duration="3s", timeout="3s", netns=None):
    """A load generator running in the background; loadgen_result() waits for it."""
    args = [BENCH, "loadgen", "--target", target, "--duration", duration, "--timeout", timeout, "--json"]
    for f in flows:
        args += ["--flow", f]
    return spawn(args, netns=netns)


def loadgen_result(p, wait=120):
    """The flows of loadgen's result line.  Exit 3 (no request got a
    response: all refused or lost) still has a result, which the test judges."""
    out, err = p.communicate(timeout=wait)
    if p.returncode not in (0, 3):
        raise RuntimeError("loadgen failed: " + err)
    return {f["name"]: f for f in json.loads(out.strip().splitlines()[-1])["flows"]}


def loadgen(target, flows, duration="3s", timeout="3s", netns=None):
    return loadgen_result(loadgen_start(target, flows, duration, timeout, netns))


def invariant_holds(st):
    c = st["counters"]
    waiting = sum(lv["waiting"] for lv in st["priorityLevels"])
    executing = sum(lv["executing"] for lv in st["priorityLevels"])
    return c["requestsReceived"] == c["responded"] + c["rejectedTotal"] + c.get("answersLost", 0) + waiting + executing


def end(d):
    """The usual ending: idle, the request invariant, a clean exit, the verdict."""
    st = d.wait_idle()
    check(invariant_holds(st), "invariant holds")
    rc, _ = d.stop()
    check(rc == 0, "clean exit")
    finish()


# --- raw protocol, for hand-made datagrams ---------------------------------

HDR = ">HBBHHQHHIIIHHI"


def attr(t, v):
    return struct.pack(">HH", t, len(v)) + v


def req_attrs(user=b"alice", groups=(), verb=b"get", resource=b"pods", cookie=None, pad=0):
    """Request attributes; cookie: the COOKIE attribute's bytes; pad: a
    PADDING attribute of that many bytes (what clients add to be challengeable)."""
    a = attr(1, user) + b"".join(attr(2, g) for g in groups) + attr(4, verb) + attr(6, resource)
    if cookie is not None:
        a += attr(ATTR_COOKIE, cookie)
    if pad:
        a += attr(ATTR_PADDING, b"\0" * pad)
    return a


def request(req_id, user=b"alice", payload=b"", seats=1, attrs=None, final_seats=0, work=0, extra_us=0):
    a = attrs if attrs is not None else attr(1, user) + attr(4, b"get") + attr(6, b"pods")
    return struct.pack(HDR, 0x4647, 1, 1, 0, 40 + len(a), req_id, seats, final_seats, work, extra_us, 0, 0, 0,
                       0) + a + payload


def service(us):
    """The payload that makes `fairgate-bench backend` hold a request us microseconds."""
    return b"FGSV" + struct.pack(">I", us)


def parse_attrs(data):
    """[(type, value)] of a message's attributes (bounded by its header length)."""
    out, off = [], 40
    end = min(len(data), struct.unpack(">H", data[6:8])[0]) if len(data) >= 40 else 0
    while off + 4 <= end:
        t, n = struct.unpack(">HH", data[off:off + 4])
        out.append((t, data[off + 4:off + 4 + n]))
        off += 4 + n
    return out


def decode_header(data):
    if len(data) < 40:
        return None
    f = struct.unpack(HDR, data[:40])
    return {"magic": f[0], "version": f[1], "type": f[2], "hdr_len": f[4], "id": f[5], "reason": f[11],
            "retry_after_ms": f[13]}


def udp_client():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(2)
    return s


# --- raw IPv4/UDP, for datagrams with a source address we do not own ---------

def raw_socket():
    """A raw socket that sends whole IPv4 packets (root only)."""
    return socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)


def ipv4_udp(src, dst, payload):
    """An IPv4 packet carrying one UDP datagram from src to dst ((ip, port)
    each).  The kernel fills in the IP checksum; UDP checksum 0 is "none"."""
    udp = struct.pack(">HHHH", src[1], dst[1], 8 + len(payload), 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, socket.IPPROTO_UDP, 0,
                     socket.inet_aton(src[0]), socket.inet_aton(dst[0]))
    return ip + udp


def send_spoofed(raw, src, dst, payload):
    raw.sendto(ipv4_udp(src, dst, payload), (dst[0], 0))
