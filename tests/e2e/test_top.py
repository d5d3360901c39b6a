# SPDX-License-Identifier: Apache-2.0
"""fairgatectl top: without a terminal one line per interval with rates from
the deltas; on a terminal (tmux) a full screen with the levels' seats as bars
and the busiest flows, and q quits it, restoring the terminal."""
import os
import re
import shutil
import subprocess
import time

import fgtest as t

b = f"127.0.0.1:{t.free_port()}"
t.backend(b)
d = t.Daemon([b], config=None)  # the bootstrap levels
lg = t.loadgen_start(d.addr, ["name=a,user=alice,groups=system:authenticated,threads=8,service=20ms",
                              "name=b,user=bob,groups=system:authenticated,rate=40"], duration="8s")
time.sleep(1)
p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "top", "--count", "3", "--interval", "0.5"],
                   capture_output=True, text=True, timeout=20)
lines = p.stdout.strip().splitlines()
t.check(p.returncode == 0 and len(lines) == 3, f"no terminal: one line per interval ({len(lines)} lines, rc {p.returncode})")
t.check(all("requests/s=" in l and "waiting=" in l for l in lines), "each line has the rates and the queues")
t.check(any(int(l.split("requests/s=")[1].split()[0]) > 0 for l in lines[1:]),
        f"requests per second from the deltas ({lines[-1] if lines else ''})")
for bad in (["--interval", "0.01"], ["--count", "0"], ["--count", "x"], ["extra"]):
    p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "top"] + bad, capture_output=True, text=True, timeout=10)
    t.check(p.returncode == 2 and "top" in p.stderr, f"top {' '.join(bad)}: usage error, exit 2 ({p.stderr.strip()})")
p = subprocess.run([t.FAIRGATECTL, "--socket", "/tmp/fg-no-such.sock", "top", "--count", "1"], capture_output=True,
                   text=True, timeout=10)
t.check(p.returncode == 1 and "cannot reach fairgate" in p.stderr, "an unreachable daemon: exit 1 with the reason")

if shutil.which("tmux"):
    name = f"fgtop{os.getpid()}"
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "110", "-y", "40",
                    f"{t.FAIRGATECTL} --socket {d.sock} top --interval 0.3"], check=True, timeout=10)
    time.sleep(1.5)
    screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True,
                            timeout=10).stdout
    t.check("PRIORITY LEVEL" in screen and "global-default" in screen and "[#" in screen and
            re.search(r"global-default.*\]\s+\d+/\d+", screen) is not None,
            "full screen: levels with their seats as bars")
    t.check("global-default/alice" in screen and "BUSIEST FLOWS" in screen, "the busiest flows are listed")
    t.check("WORKER" in screen and "BUSY" in screen and "BACKEND" in screen and " up " in screen,
            "workers' busy ratio and the backends are shown")
    subprocess.run(["tmux", "send-keys", "-t", name, "q"], timeout=10)
    deadline = time.time() + 3
    alive = True
    while alive and time.time() < deadline:
        alive = subprocess.run(["tmux", "has-session", "-t", name], capture_output=True, timeout=10).returncode == 0
        time.sleep(0.1)
    t.check(not alive, "q quits")
    if alive:
        subprocess.run(["tmux", "kill-session", "-t", name], timeout=10)
else:
    print("note: tmux not installed: the full-screen part is not checked")
t.loadgen_result(lg)
t.finish()
