# SPDX-License-Identifier: Apache-2.0
"""A single-member etcd for the cluster tests: installed from Debian's
etcd-server when missing (the test is skipped, exit 77, when that fails),
started on loopback with free TCP ports and a temporary data directory, and
stopped and removed at exit whatever happens.  Every wait is bounded."""
import atexit
import base64
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

import fgtest as t

SKIP = 77
START_TIMEOUT_S = 20
HTTP_TIMEOUT_S = 2


def ensure_installed():
    """The etcd binary's path; exits 77 (meson's skip) when it cannot be had."""
    path = shutil.which("etcd")
    if path:
        return path
    try:
        r = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "etcd-server"],
                           capture_output=True, text=True, timeout=240,
                           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        path = shutil.which("etcd")
        if not path:
            print("skip: apt-get install etcd-server failed: " + r.stderr.strip()[-300:])
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"skip: cannot install etcd-server: {e}")
    if not path:
        sys.exit(SKIP)
    return path


def b64(text):
    return base64.b64encode(text.encode()).decode()


class Etcd:
    """One etcd member on 127.0.0.1; `url` is its client URL.  With tls
    ({ca, cert, key, client_cert, client_key}: PEM paths), it serves https
    and requires client certificates (--client-cert-auth); this helper's own
    calls present client_cert.  `token` (set after etcd's auth is enabled)
    goes with every call of this helper."""

    def __init__(self, name="fgtest", tls=None, extra=()):
        binary = ensure_installed()
        self.dir = tempfile.mkdtemp(prefix="fg-etcd-")
        self.client_port, peer_port = t.free_port(socket.SOCK_STREAM), t.free_port(socket.SOCK_STREAM)
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.client_port}"
        peer = f"http://127.0.0.1:{peer_port}"
        self.log_path = os.path.join(self.dir, "etcd.log")
        self.args = [binary, "--name", name, "--data-dir", os.path.join(self.dir, "data"),
                     "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
                     "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                     "--initial-cluster", f"{name}={peer}", "--initial-cluster-state", "new"] + list(extra)
        self.ctx = None
        self.token = None
        if tls:
            self.args += ["--cert-file", tls["cert"], "--key-file", tls["key"], "--trusted-ca-file", tls["ca"],
                          "--client-cert-auth"]
            self.ctx = ssl.create_default_context(cafile=tls["ca"])
            self.ctx.load_cert_chain(tls["client_cert"], tls["client_key"])
        self.proc = None
        atexit.register(self.remove)
        self.start()

    def start(self):
        """Start (or restart, on the same data directory and ports) and wait until healthy."""
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.time() + START_TIMEOUT_S
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"etcd exited ({self.proc.returncode}): {self.log_tail()}")
            if self.healthy():
                return
            time.sleep(0.1)
        raise RuntimeError("etcd not healthy after %d s: %s" % (START_TIMEOUT_S, self.log_tail()))

    def healthy(self):
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=HTTP_TIMEOUT_S, context=self.ctx) as r:
                return json.loads(r.read()).get("health") == "true"
        except (OSError, ValueError):
            return False

    def call(self, path, body):
        """A v3 JSON gateway call (`/v3/kv/range`, ...): the decoded answer."""
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = self.token
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), headers=headers)
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S, context=self.ctx) as r:
            return json.loads(r.read())

    def enable_auth(self, users):
        """etcd's authentication on, with root (password "root-pw") and, for
        each {name: password}, a user whose role may read and write under
        /fairgate/; then this helper calls as root."""
        self.call("/v3/auth/user/add", {"name": "root", "password": "root-pw"})
        self.call("/v3/auth/role/add", {"name": "root"})
        self.call("/v3/auth/user/grant", {"user": "root", "role": "root"})
        self.call("/v3/auth/role/add", {"name": "fairgate-members"})
        self.call("/v3/auth/role/grant", {"name": "fairgate-members", "perm": {
            "permType": "READWRITE", "key": b64("/fairgate/"), "range_end": b64("/fairgate0")}})
        for name, password in users.items():
            self.call("/v3/auth/user/add", {"name": name, "password": password})
            self.call("/v3/auth/user/grant", {"user": name, "role": "fairgate-members"})
        self.call("/v3/auth/enable", {})
        self.login("root", "root-pw")

    def login(self, name, password):
        self.token = None
        self.token = self.call("/v3/auth/authenticate", {"name": name, "password": password})["token"]

    def keys(self, prefix):
        """{key: value} of every key under prefix."""
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        res = self.call("/v3/kv/range", {"key": b64(prefix), "range_end": b64(end)})
        return {base64.b64decode(kv["key"]).decode(): base64.b64decode(kv.get("value", "")).decode()
                for kv in res.get("kvs", [])}

    def pause(self):
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(timeout=10)

    def log_tail(self, n=1500):
        try:
            with open(self.log_path) as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def remove(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
