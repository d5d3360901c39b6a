# SPDX-License-Identifier: Apache-2.0
"""The control socket and the command lines: status and version work;
malformed JSON, unknown commands, oversized lines and too many clients get
errors while the daemon stays healthy; bad flags and settings files are
refused with clear messages (exit 2)."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import fgtest as t


def raw(sock_path, payload, read=True):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(sock_path)
    s.sendall(payload)
    data = b""
    while read and not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data) if data else None


b = f"127.0.0.1:{t.free_port()}"
t.backend(b)
d = t.Daemon([b], ["--seat-limit", "7"])
st = d.status()
t.check(t.level_of(st)["seatLimit"] == 7 and st["serverConcurrencyLimit"] == 7 and st["backends"] == 1,
        "status shows the settings and the level's derived limit")
t.check(oct(os.stat(d.sock).st_mode & 0o777) == "0o660", "control socket mode 0660")
out = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "version"], capture_output=True, text=True)
t.check(out.returncode == 0 and "fairgate 0.1.0" in out.stdout, "fairgatectl version")
out = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "status"], capture_output=True, text=True)
t.check(out.returncode == 0 and "PRIORITY LEVEL" in out.stdout and "tests" in out.stdout, "status table")

r = raw(d.sock, b"{not json\n")
t.check(r["ok"] is False and "malformed JSON" in r["error"], "malformed JSON gets an error")
r = raw(d.sock, b'{"com\xdd\x91\x9e\x9b\xc5\xdd\xdd}\n')
t.check(r["ok"] is False and "malformed JSON" in r["error"], "invalid UTF-8 gets a valid JSON error (fuzz finding)")
r = raw(d.sock, b'{"command":"frobnicate"}\n')
t.check(r["ok"] is False and "unknown command" in r["error"], "unknown command gets an error")
r = raw(d.sock, b'[1,2,3]\n')
t.check(r["ok"] is False, "non-object request gets an error")
r = raw(d.sock, b"x" * (4 * 1024 * 1024 + 10))
t.check(r is not None and r["ok"] is False and "longer than" in r["error"], "oversized line refused")
# Two requests on one connection, answered in order.
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
s.connect(d.sock)
s.sendall(b'{"command":"version"}\n{"command":"status"}\n')
data = b""
while data.count(b"\n") < 2:
    data += s.recv(65536)
lines = [json.loads(x) for x in data.splitlines()]
t.check(lines[0]["result"]["version"] == "0.1.0" and "counters" in lines[1]["result"], "pipelined requests")
s.close()
# More clients than allowed: the extra ones are told so; the daemon stays up.
held = []
for _ in range(20):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(d.sock)
    held.append(c)
extra = held[-1]
extra.settimeout(5)
msg = extra.recv(4096)
t.check(b"too many control clients" in msg, "client limit enforced with an error")
for c in held:
    c.close()


def status_once_closed():
    """The daemon sees the closes as it polls: until then a new client may
    still be one too many (a CI run met it)."""
    deadline = time.time() + 5
    while True:
        try:
            return d.status()
        except RuntimeError as e:
            if "too many control clients" not in str(e) or time.time() > deadline:
                raise
            time.sleep(0.05)


t.check(status_once_closed()["counters"]["requestsReceived"] == 0, "daemon healthy after the abuse")
# A slow client: an incomplete line is answered with an error after the read timeout.
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(d.sock)
s.sendall(b'{"command": "sta')
t0 = time.time()
msg = s.recv(4096)
t.check(b"read timeout" in msg and 4 <= time.time() - t0 <= 9, "a slow client is cut off after the read timeout")
s.close()
# Peer credentials: a non-root peer may read but not change the configuration.
os.chmod(d.sock, 0o666)
probe = """
import os, socket, json, sys
os.setgid(65534); os.setuid(65534)
out = []
for req in ({"command": "status"}, {"command": "apply", "data": "{}"}, {"command": "delete", "kind": "fs", "name": "x"}):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sys.argv[1])
    s.sendall((json.dumps(req) + "\\n").encode()); data = b""
    while not data.endswith(b"\\n"): data += s.recv(65536)
    out.append(json.loads(data))
print(json.dumps([o["ok"] for o in out] + [out[1].get("error", "")]))
"""
p = subprocess.run([sys.executable, "-c", probe, d.sock], capture_output=True, text=True, timeout=20)
res = json.loads(p.stdout) if p.returncode == 0 else None
t.check(res is not None and res[:3] == [True, False, False] and "permission denied" in res[3],
        f"uid 65534 may read status but not apply or delete ({res or p.stderr.strip()[-200:]})")
os.chmod(d.sock, 0o660)
out = subprocess.run([t.FAIRGATECTL, "--socket", "/nonexistent.sock", "status"], capture_output=True, text=True)
t.check(out.returncode == 1 and "cannot reach fairgate" in out.stderr, "unreachable daemon: exit 1, clear error")
out = subprocess.run([t.FAIRGATECTL, "bogus"], capture_output=True, text=True)
t.check(out.returncode == 2 and "unknown command" in out.stderr, "fairgatectl unknown command: exit 2")
# A second daemon on the same control socket is refused.
p = subprocess.run([t.FAIRGATE, "--listen", f"127.0.0.1:{t.free_port()}", "--http", "127.0.0.1:0", "--control-socket", d.sock],
                   capture_output=True, text=True, timeout=10)
t.check(p.returncode == 1 and f"another fairgate is listening on {d.sock}" in p.stderr, "control socket in use: refused")
# A whole configuration file, FairgateSettings included, can be applied live:
# reloadable settings change, restart-only ones are refused.
with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
    f.write("apiVersion: fairgate.dev/v1alpha1\nkind: FairgateSettings\nspec: {serverConcurrencyLimit: 9, "
            "queueWaitLimit: 3s}\n---\n" + t.level_config(queues=32))
p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "apply", "-f", f.name], capture_output=True, text=True)
st = d.wait_status(lambda st: t.level_of(st)["seatLimit"] == 9 and t.level_of(st)["queues"] == 32)
t.check(p.returncode == 0 and st["serverConcurrencyLimit"] == 9 and t.level_of(st)["seatLimit"] == 9
        and t.level_of(st)["queues"] == 32, "apply with FairgateSettings: the new server limit and queues are in force")
with open(f.name, "w") as g:
    g.write("apiVersion: fairgate.dev/v1alpha1\nkind: FairgateSettings\nspec: {listen: 127.0.0.1:1}\n")
p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "apply", "-f", f.name], capture_output=True, text=True)
t.check(p.returncode == 1 and "spec.listen: cannot change while fairgate runs" in p.stderr
        and d.status()["serverConcurrencyLimit"] == 9, "a restart-only setting is refused and nothing changes")
with open(f.name, "w") as g:
    g.write(f"apiVersion: fairgate.dev/v1alpha1\nkind: FairgateSettings\nspec: {{io: dpdk, workers: {t.WORKERS + 1}}}\n")
p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "apply", "-f", f.name], capture_output=True, text=True)
t.check(p.returncode == 1 and "spec.workers: cannot change while fairgate runs" in p.stderr
        and len(d.status()["workers"]) == t.WORKERS, "the worker count is restart-only")
with open(f.name, "w") as g:
    g.write("apiVersion: fairgate.dev/v1alpha1\nkind: FairgateSettings\nspec: {allotmentPeriod: 5ms}\n")
p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "apply", "-f", f.name], capture_output=True, text=True)
t.check(p.returncode == 0, f"the allotment period is reloadable ({p.stderr.strip()})")
os.unlink(f.name)
rc, _ = d.stop()
t.check(rc == 0 and not os.path.exists(d.sock), "clean exit removes the control socket")

# Flags and settings files.
def run(*args):
    return subprocess.run([t.FAIRGATE] + list(args), capture_output=True, text=True, timeout=10)

p = run("--help")
t.check(p.returncode == 0 and "--backend ADDR:PORT" in p.stdout, "--help")
p = run("--version")
t.check(p.returncode == 0 and "fairgate 0.1.0" in p.stdout, "--version")
p = run("--seat-limit", "0")
t.check(p.returncode == 2 and "invalid value for --seat-limit" in p.stderr, "bad flag value: exit 2")
for flag, value in (("--workers", "0"), ("--workers", "lots"), ("--workers", "65"),
                    ("--allotment-period", "10us"), ("--allotment-period", "soon"),
                    ("--trusted-source", "10.1.2.3/8"), ("--trusted-source", "10.0.0.0/33"),
                    ("--trusted-source", "x" * 5000), ("--address-validation", "sometimes"),
                    ("--max-extra-latency", "61s"), ("--max-extra-latency", "-1s")):
    p = run(flag, value)
    t.check(p.returncode == 2 and f"invalid value for {flag}" in p.stderr, f"{flag} {value[:40]}: exit 2 with the flag named")
p = run("--listen", "0.0.0.0:7400", "--backend", "127.0.0.1:7400")
t.check(p.returncode == 2 and "fairgate would send requests to itself" in p.stderr,
        "a backend that is fairgate itself (wildcard listen, loopback backend on its port): refused")
p = run("--backend", "127.0.0.1:7501,seats=0")
t.check(p.returncode == 2 and "invalid value for --backend" in p.stderr and ",seats=N" in p.stderr,
        "backend capacity 0: exit 2 with the format named")
p = run("--io", "dpdk", "--workers", "4", "--backend", "127.0.0.1:7501,seats=3")
t.check(p.returncode == 2 and "spec.backends[0]: seats=3 is fewer than the 4 workers" in p.stderr,
        "backend capacity below the worker count: refused with the reason")
p = run("--workers", "2", "--backend", "127.0.0.1:7501,seats=1")
t.check(p.returncode == 2 and "spec.backends[0]: seats=1 is fewer than the 2 workers" in p.stderr,
        "socket mode: backend capacity below the worker count: refused with the reason")
p = run("--io", "dpdk", "--workers", "2", "--allotment-period", "200ms")
t.check(p.returncode == 2 and "spec.allotmentPeriod: must be at most 100ms" in p.stderr, "allotment period above 100ms: refused")
p = run("--io", "dpdk", "--workers", "2", "--listen", "192.0.2.2:7400", "--control-socket", d.sock + ".x", "--",
        "--no-huge", "-m", "512", "--no-pci", "--no-shconf", f"--file-prefix=fgctl{os.getpid()}", "-l", "0",
        "--vdev=net_null0", "--log-level=lib.eal:warning")
t.check(p.returncode == 2 and "--workers 2 needs 2 DPDK lcores; EAL has 1" in p.stderr,
        "more workers than EAL lcores: refused with the fix named")
p = run("--listen", "localhost")
t.check(p.returncode == 2 and "--listen" in p.stderr, "bad listen address: exit 2")
with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
    f.write(t.level_config(queues=512, hand=8))
p = run("--config", f.name)
t.check(p.returncode == 2 and "handSize: Invalid value: 8: required entropy bits of deckSize 512 and handSize 8 should not be greater than 60" in p.stderr,
        "a hand too large for the queues is refused at start-up")
os.unlink(f.name)
p = run("--no-such-flag")
t.check(p.returncode == 2, "unknown flag: exit 2")
with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    f.write('{"apiVersion":"fairgate.dev/v1alpha1","kind":"FairgateSettings","spec":'
            '{"serverConcurrencyLimit":-1,"backends":["x"],"queueWaitLimit":"later"}}')
p = run("--config", f.name)
t.check(p.returncode == 2 and "3 error(s)" in p.stderr and "spec.backends[0]" in p.stderr
        and "spec.serverConcurrencyLimit" in p.stderr and "spec.queueWaitLimit" in p.stderr,
        "settings file: every error reported with its field")
with open(f.name, "w") as g:
    g.write('{"apiVersion":"fairgate.dev/v1alpha1","kind":"FairgateSettings","spec":'
            '{"serverConcurrencyLimit":9,"backends":["127.0.0.1:9001"],"queueWaitLimit":"2s"}}')
p = run("--config", f.name, "--check", "--queue-wait", "3s")
t.check(p.returncode == 0 and "serverConcurrencyLimit: 9" in p.stdout and "queueWaitLimit: 3s" in p.stdout
        and "127.0.0.1:9001" in p.stdout and "global-default: Limited/Queue, nominal 1 seats" in p.stdout,
        "file then flags; --check prints the settings and the bootstrap levels")
p = run("--config", "/nonexistent.json")
t.check(p.returncode == 2 and "No such file" in p.stderr, "missing settings file: exit 2")
os.unlink(f.name)
t.finish()
