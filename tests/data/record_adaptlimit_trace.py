# SPDX-License-Identifier: Apache-2.0
"""Record the latency trace tests/test_adaptlimit.c replays
(adaptlimit_emulator_trace.csv): the backend emulator (`fairgate-bench
backend`, 8 requests at once, log-normal service times of median 20 ms) on
loopback, driven by a closed loop whose concurrency steps 4 -> 16 -> 4 ->
8 (2 s, 3 s, 3 s, 2 s): under, at twice, under and at the backend's
capacity.  One line per answer: when it came (us from the start), its
seats (1), its latency (us) and the requests outstanding when it was sent.

Usage: python3 tests/data/record_adaptlimit_trace.py BUILD_DIR > tests/data/adaptlimit_emulator_trace.csv
Bounded: 10 s of load, loopback only."""
import select
import socket
import struct
import subprocess
import sys
import time

HDR = ">HBBHHQHHIIIHHI"
PHASES = [(4, 2.0), (16, 3.0), (4, 3.0), (8, 2.0)]


def request(req_id):
    attrs = struct.pack(">HH", 1, 1) + b"t"
    return struct.pack(HDR, 0x4647, 1, 1, 0, 40 + len(attrs), req_id, 1, 0, 0, 0, 0, 0, 0, 0) + attrs


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    backend = subprocess.Popen([f"{build}/bench/fairgate-bench", "backend", "--listen", f"127.0.0.1:{port}",
                                "--workers", "8", "--service-time", "20ms", "--distribution", "log-normal",
                                "--sigma", "0.2", "--duration", "30s"])
    time.sleep(0.3)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.connect(("127.0.0.1", port))
    start = time.monotonic()
    sent, next_id = {}, 1
    print("t_us,seats,latency_us,outstanding")
    try:
        for concurrency, seconds in PHASES:
            until = time.monotonic() + seconds
            while time.monotonic() < until:
                while len(sent) < concurrency:
                    sent[next_id] = (time.monotonic(), len(sent) + 1)
                    s.send(request(next_id))
                    next_id += 1
                ready, _, _ = select.select([s], [], [], 0.5)
                if not ready:
                    continue
                data = s.recv(2048)
                now = time.monotonic()
                req_id = struct.unpack(">Q", data[8:16])[0]
                if req_id in sent:
                    at, outstanding = sent.pop(req_id)
                    print(f"{int((now - start) * 1e6)},1,{int((now - at) * 1e6)},{outstanding}")
    finally:
        backend.terminate()
        backend.wait()


if __name__ == "__main__":
    main()
