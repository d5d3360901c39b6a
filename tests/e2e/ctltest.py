# SPDX-License-Identifier: Apache-2.0
"""Helpers for the control-socket tests: raw connections, and a peer that
runs as another uid (with chosen supplementary groups) and keeps its
connections open between the steps the test drives.  Every read is bounded."""
import json
import os
import socket
import subprocess
import sys

import fgtest as t

NOBODY = 65534


def connect(path, timeout=10):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def read_line(s, limit=64 << 20):
    """One newline-terminated line, or what came before EOF (bytes)."""
    data = b""
    while not data.endswith(b"\n") and len(data) < limit:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def ask(s, req):
    s.sendall((json.dumps(req) + "\n").encode())
    line = read_line(s)
    return json.loads(line) if line.endswith(b"\n") else None


def need_root():
    if os.geteuid() != 0:
        print("SKIP: needs root to run peers under other uids")
        sys.exit(77)


# The peer: one JSON command per stdin line, one JSON result per stdout line.
# {"conn": K} opens connection K (if new); "req" sends a request; "read"
# (default true) waits for one line; "wait" bounds that wait in seconds.
_PEER = r"""
import json, os, socket, sys
os.setgroups([int(g) for g in sys.argv[4].split(",") if g])
os.setgid(int(sys.argv[3]))
os.setuid(int(sys.argv[2]))
conns = {}
for line in sys.stdin:
    cmd = json.loads(line)
    out = {}
    try:
        k = cmd.get("conn", 0)
        if k not in conns:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sys.argv[1])
            conns[k] = s
        s = conns[k]
        s.settimeout(cmd.get("wait", 10))
        if "req" in cmd:
            s.sendall((json.dumps(cmd["req"]) + "\n").encode())
        if cmd.get("read", True):
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    out["eof"] = True
                    break
                data += chunk
            out["answer"] = json.loads(data) if data.endswith(b"\n") else None
    except Exception as e:
        out["exc"] = repr(e)
    print(json.dumps(out), flush=True)
"""


class Peer:
    """A client process running as uid/gid with the given supplementary
    groups (the socket must let it connect: chmod it 0666).  It drops its
    rights itself, after the interpreter (which may live under /root) has
    started."""

    def __init__(self, sock_path, uid=NOBODY, gid=NOBODY, groups=()):
        self.proc = t.spawn([sys.executable, "-c", _PEER, sock_path, str(uid), str(gid),
                             ",".join(str(g) for g in groups)], stdin=subprocess.PIPE)

    def do(self, **cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        return json.loads(line) if line else {"exc": "peer died: " + self.proc.stderr.read()[-300:]}

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def apply_admins(d, uids=(), gids=()):
    """Set controlAdmins live (as root, through fairgatectl)."""
    text = ("apiVersion: fairgate.dev/v1alpha1\nkind: FairgateSettings\n"
            f"spec: {{controlAdmins: {{uids: {list(uids)}, gids: {list(gids)}}}}}\n")
    p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "apply", "-f", "-"], input=text, capture_output=True,
                       text=True, timeout=10)
    return p.returncode == 0, p.stderr
