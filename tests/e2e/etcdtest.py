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
import subprocess
import sys
import tempfile
import time
import urllib.request

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


def free_tcp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def b64(text):
    return base64.b64encode(text.encode()).decode()


class Etcd:
    """One etcd member on 127.0.0.1; `url` is its client URL."""

    def __init__(self, name="fgtest"):
        binary = ensure_installed()
        self.dir = tempfile.mkdtemp(prefix="fg-etcd-")
        self.client_port, peer_port = free_tcp_port(), free_tcp_port()
        self.url = f"http://127.0.0.1:{self.client_port}"
        peer = f"http://127.0.0.1:{peer_port}"
        self.log_path = os.path.join(self.dir, "etcd.log")
        self.args = [binary, "--name", name, "--data-dir", os.path.join(self.dir, "data"),
                     "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
                     "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                     "--initial-cluster", f"{name}={peer}", "--initial-cluster-state", "new"]
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
            with urllib.request.urlopen(self.url + "/health", timeout=HTTP_TIMEOUT_S) as r:
                return json.loads(r.read()).get("health") == "true"
        except (OSError, ValueError):
            return False

    def call(self, path, body):
        """A v3 JSON gateway call (`/v3/kv/range`, ...): the decoded answer."""
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as r:
            return json.loads(r.read())

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
