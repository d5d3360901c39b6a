#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fairgate demo: builds, then runs fairgate in kernel-socket mode on
# loopback with its embedded default configuration, two emulated backends and
# a load generator driving two tenants — one flooding, one light — for about
# DEMO_SECONDS (default 20) seconds.  Shows a live table, then a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/install-deps
if [ ! -f build/build.ninja ]; then meson setup build >/dev/null; fi
ninja -C build >/dev/null

SECONDS_TO_RUN=${DEMO_SECONDS:-20}
B=build
WORK=$(mktemp -d /tmp/fairgate-demo.XXXXXX)
SOCK=$WORK/fairgate.sock
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# Pick free loopback ports so the demo never collides with anything.
read -r FG_PORT BE1_PORT BE2_PORT < <(python3 -c '
import socket
ss=[socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(3)]
[s.bind(("127.0.0.1", 0)) for s in ss]
ports = [s.getsockname()[1] for s in ss]
[s.close() for s in ss]  # before printing: the reader starts binding them at once
print(*ports, flush=True)')

# Two backends, 8 concurrent requests each: 16 seats of real capacity, and
# the server limit is those 16 seats (seats=8 each: fairgate, not the
# backends' sockets, decides who waits).  With the embedded Kubernetes
# bootstrap levels, global-default (where authenticated users land) has a
# nominal 2 of them and borrows what the idle levels lend (borrowing, a round
# every second here instead of Kubernetes' 10 s).
$B/bench/fairgate-bench backend --listen 127.0.0.1:$BE1_PORT --workers 8 2>>"$WORK/backend.log" & pids+=($!)
$B/bench/fairgate-bench backend --listen 127.0.0.1:$BE2_PORT --workers 8 2>>"$WORK/backend.log" & pids+=($!)
$B/dataplane/fairgate --listen 127.0.0.1:$FG_PORT --control-socket "$SOCK" --seat-limit 16 --borrowing-period 1s \
  --backend 127.0.0.1:$BE1_PORT,seats=8 --backend 127.0.0.1:$BE2_PORT,seats=8 2>>"$WORK/fairgate.log" & pids+=($!)
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done

echo "fairgate on 127.0.0.1:$FG_PORT with the embedded default configuration (Kubernetes bootstrap"
echo "FlowSchemas and levels); tenant-heavy floods with 200 closed-loop clients, tenant-light sends"
echo "from 2; both land in global-default (which borrows idle levels' seats), one flow each; every request takes 20 ms."
$B/bench/fairgate-bench loadgen --target 127.0.0.1:$FG_PORT --duration ${SECONDS_TO_RUN}s --timeout 5s --json \
  --flow name=tenant-heavy,user=tenant-heavy,groups=system:authenticated,threads=200,service=20ms \
  --flow name=tenant-light,user=tenant-light,groups=system:authenticated,threads=2,service=20ms >"$WORK/result.json" &
load=$!
sleep 1
$B/control/fairgatectl --socket "$SOCK" status --watch 1 --count $((SECONDS_TO_RUN - 1)) || true
wait $load

echo
echo "=== summary ==="
python3 - "$WORK/result.json" <<'PY'
import json, sys
flows = {f["name"]: f for f in json.load(open(sys.argv[1]))["flows"]}
print(f"{'tenant':<14}{'sent':>9}{'responses':>11}{'rejected':>10}{'resp/s':>9}{'p50 ms':>9}{'p99 ms':>9}")
for n, f in flows.items():
    print(f"{n:<14}{f['sent']:>9}{f['responses']:>11}{f['rejectedTotal']:>10}{f['responsesPerSec']:>9.1f}"
          f"{f['latencyP50Ms']:>9.1f}{f['latencyP99Ms']:>9.1f}")
light, heavy = flows["tenant-light"], flows["tenant-heavy"]
ok = light["rejectedTotal"] == 0 and light["lost"] == 0 and light["latencyP99Ms"] < 3 * 20
print()
if ok:
    print(f"light tenant PROTECTED: all {light['responses']} of its requests served, p99 {light['latencyP99Ms']:.1f} ms"
          f" (service time 20 ms) while the heavy tenant's p99 is {heavy['latencyP99Ms']:.1f} ms.")
else:
    print(f"light tenant NOT protected: p99 {light['latencyP99Ms']:.1f} ms, {light['rejectedTotal']} rejected.")
PY
