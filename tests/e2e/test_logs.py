# SPDX-License-Identifier: Apache-2.0
"""The daemon's log with --log-format json: every line is one JSON object
with ts, level and msg; start-up, an apply (with the peer's uid), a
permission refusal on the control socket, a backend ejection and recovery,
and dropped datagrams (one line per reason at the drain) are there, and a
hostile name stays inside its JSON string.  Also controlSocketGroup and
controlSocketMode: the socket file's group and mode, and a member of that
group who can connect (and read) but not change."""
import grp
import json
import os
import socket
import stat
import subprocess
import tempfile
import time

import ctltest as c
import fgtest as t

c.need_root()
NOGROUP = grp.getgrgid(c.NOBODY).gr_name  # Debian's "nogroup"

dead = f"127.0.0.1:{t.free_port()}"  # nothing answers there until the backend starts
log = tempfile.mktemp(prefix="fg-logs-", suffix=".log", dir="/tmp")
d = t.Daemon([dead], ["--log-format", "json", "--backend-timeout", "100ms", "--backend-eject-after", "2",
                      "--backend-eject-time", "300ms", "--control-socket-group", NOGROUP,
                      "--control-socket-mode", "0660"], log=log)

# The socket file: group and mode as set, so the group's members may connect.
st = os.stat(d.sock)
t.check(st.st_gid == c.NOBODY and stat.S_IMODE(st.st_mode) == 0o660,
        f"control socket group {NOGROUP} and mode 0660 ({st.st_gid}, {oct(stat.S_IMODE(st.st_mode))})")

# A root apply: logged with uid 0 and the new generation.
plc = ("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\n"
       "metadata: {name: logged}\nspec: {type: Limited, limited: {nominalConcurrencyShares: 5, "
       "limitResponse: {type: Reject}}}\n")
p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "apply", "-f", "-"], input=plc, capture_output=True,
                   text=True, timeout=10)
t.check(p.returncode == 0, f"apply as root ({p.stderr.strip()[-200:]})")
# A hostile name: refused, and its quote and newline stay escaped in the line.
hostile = plc.replace("name: logged", 'name: "bad\\"name\\e[31m{x}"')
subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "apply", "-f", "-"], input=hostile, capture_output=True,
               text=True, timeout=10)

# uid 65534 in the socket's group: connects and reads, may not apply.
peer = c.Peer(d.sock, uid=c.NOBODY, gid=c.NOBODY)
r1 = peer.do(req={"command": "status"})
r2 = peer.do(req={"command": "apply", "data": plc})
peer.close()
t.check((r1.get("answer") or {}).get("ok") is True, f"a member of {NOGROUP} connects and reads status ({str(r1)[:200]})")
t.check("permission denied" in ((r2.get("answer") or {}).get("error") or ""), f"but may not apply ({r2})")

# A backend that does not answer: ejected after 2 timeouts; once it runs and
# the ejection time is up, the probe brings it back.
t.loadgen(d.addr, ["name=dead,user=u,threads=1,service=1ms,count=4"], duration="10s", timeout="2s")
t.backend(dead)
time.sleep(0.5)
res = t.loadgen(d.addr, ["name=back,user=u,threads=1,service=1ms,count=20"], duration="10s", timeout="2s")
t.check(res["back"]["responses"] > 0, f"the backend serves again ({res['back']['responses']}/20)")
time.sleep(0.6)  # the control thread looks every 250 ms

# Malformed datagrams: counted by the workers, logged by the control thread.
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(5):
    s.sendto(b"xx", ("127.0.0.1", d.port))
s.close()
time.sleep(0.3)
rc, _ = d.stop()
t.check(rc == 0, "clean exit")

# Bad values: refused at start-up (exit 2) with the reason, nothing bound.
for flags, want in ((["--control-socket-group", "no-such-group-x"],
                     'controlSocketGroup \\"no-such-group-x\\": no such group'),
                    (["--control-socket-mode", "0664"], "0664 gives others access"),
                    (["--log-format", "xml"], 'must be "text" or "json"')):
    sock = tempfile.mktemp(prefix="fg-", suffix=".sock", dir="/tmp")
    p = subprocess.run([t.FAIRGATE, "--listen", f"127.0.0.1:{t.free_port()}", "--control-socket", sock, "--http",
                        "off"] + flags, capture_output=True, text=True, timeout=20)
    t.check(p.returncode == 2 and want in p.stderr and not os.path.exists(sock),
            f"{' '.join(flags)}: exit 2, {want} ({p.returncode}, {p.stderr.strip()[-200:]})")

lines = open(log).read().splitlines()
docs, bad = [], []
for line in lines:
    try:
        docs.append(json.loads(line))
    except ValueError:
        bad.append(line)
t.check(lines and not bad, f"every line is JSON ({len(lines)} lines; not: {bad[:3]})")
t.check(all(isinstance(x, dict) and {"ts", "level", "msg"} <= x.keys() and
            x["level"] in ("debug", "info", "warn", "error") for x in docs), "each has ts, level and msg")


def find(msg, **fields):
    return [x for x in docs if x.get("msg") == msg and all(x.get(k) == v for k, v in fields.items())]


started = find("started", io="socket", listen=d.addr, workers=t.WORKERS)
t.check(len(started) == 1 and started[0]["level"] == "info" and started[0]["http"] != "off",
        f"start-up: listen address, io mode, workers, http ({started})")
t.check(any(x["msg"].startswith("http on 127.0.0.1:") for x in docs), "the http line keeps its text")
applied = find("configuration changed", command="apply", uid=0)
t.check(len(applied) == 1 and applied[0]["generation"] == 2 and applied[0]["objects"] == 1,
        f"the apply: uid 0, generation 2, 1 object ({applied})")
refused = find("configuration change refused", command="apply", uid=0)
t.check(len(refused) == 1 and "bad\"name\x1b[31m{x}" in refused[0].get("details", ""),
        f"the refused hostile name, intact inside a JSON string ({refused})")
denied = find("permission denied", command="apply", uid=c.NOBODY, gid=c.NOBODY)
t.check(len(denied) == 1 and denied[0]["level"] == "warn", f"the permission refusal with the peer's uid ({denied})")
ejected = find("backend ejected", backend=dead)
t.check(len(ejected) >= 1 and ejected[0]["level"] == "warn" and ejected[0]["ejections"] >= 1,
        f"the ejection ({ejected})")
recovered = find("backend recovered", backend=dead)
t.check(len(recovered) >= 1, f"the recovery ({recovered})")
dropped = [x for x in docs if x["msg"] == "datagrams dropped"]
t.check(len(dropped) == 1 and dropped[0]["count"] == 5, f"5 malformed datagrams: one line for the reason ({dropped})")
t.check(not any("requestId" in x or x["msg"].startswith("request") for x in docs), "nothing per request")
os.unlink(log)
t.finish()
