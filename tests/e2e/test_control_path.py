# SPDX-License-Identifier: Apache-2.0
"""The control socket path at start-up (issue 17): a regular file there is
kept and start-up fails with a message; a stale socket (nobody listening) is
replaced; a socket someone listens on is refused and left alone."""
import os
import socket
import subprocess
import tempfile
import time

import fgtest as t

tmp = tempfile.mkdtemp(prefix="fg-path-")
path = os.path.join(tmp, "fairgate.sock")


def start(extra=()):
    return subprocess.run([t.FAIRGATE, "--listen", f"127.0.0.1:{t.free_port()}", "--http", "127.0.0.1:0", "--control-socket", path]
                          + list(extra), capture_output=True, text=True, timeout=20)


# A regular file: kept, refused.
with open(path, "w") as f:
    f.write("precious\n")
p = start()
with open(path) as f:
    kept = f.read()
t.check(p.returncode == 1 and f"control socket {path}: the path exists and is not a socket; not removing it" in p.stderr,
        f"a regular file at the socket path: exit 1 with the reason ({p.returncode}, {p.stderr.strip()[-200:]})")
t.check(kept == "precious\n", "the regular file is kept as it was")
os.unlink(path)

# A socket someone listens on: refused, left alone.
live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
live.bind(path)
live.listen(1)
p = start()
t.check(p.returncode == 1 and f"another fairgate is listening on {path}" in p.stderr,
        f"a live socket: exit 1, another fairgate is listening ({p.stderr.strip()[-200:]})")
t.check(os.path.exists(path), "the live socket is left in place")
live.close()

# Now stale (bound, nobody listens): replaced, and the daemon serves on it.
t.check(os.path.exists(path), "a stale socket is at the path")
b = f"127.0.0.1:{t.free_port()}"
proc = t.spawn([t.FAIRGATE, "--listen", f"127.0.0.1:{t.free_port()}", "--http", "127.0.0.1:0", "--control-socket", path,
                "--backend", b])
answered = None
deadline = time.time() + 20
while time.time() < deadline and proc.poll() is None and answered is None:
    out = subprocess.run([t.FAIRGATECTL, "--socket", path, "version"], capture_output=True, text=True, timeout=10)
    answered = out.stdout if out.returncode == 0 else None
    time.sleep(0.1)
t.check(answered is not None and "fairgate 0.1.0" in answered, "a stale socket is replaced and the daemon answers on it")
proc.terminate()
proc.wait(timeout=20)
t.check(proc.returncode == 0 and not os.path.exists(path), "clean exit removes its socket")
os.rmdir(tmp)
t.finish()
