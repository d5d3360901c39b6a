#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end throughput on this machine, as ratios against a baseline
# measured in the same command: the load generator straight to the emulated
# backend (no fairgate), then through fairgate in socket mode with one
# worker and with two (WORKERS2, default 2: each worker its own SO_REUSEPORT
# socket), then through fairgate in DPDK mode (net_tap inside a network
# namespace this script creates and removes).  Zero service time, so the
# numbers are the cost of the request path.  The clients are authenticated
# users (system:authenticated), so their requests land in global-default, a
# queuing level, not in catch-all's Reject.  Bounded: each phase runs
# DURATION (default 5s).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${FAIRGATE_BUILD:-build}
DURATION=${DURATION:-5s}
THREADS=${THREADS:-64}
WORK=$(mktemp -d /tmp/fairgate-tput.XXXXXX)
NS=fgtput-$$
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

rate() { # target [netns]
  local pre=()
  [ -n "${2:-}" ] && pre=(ip netns exec "$2")
  "${pre[@]}" $B/bench/fairgate-bench loadgen --target "$1" --duration "$DURATION" --timeout 2s --json \
    --flow name=load,user=bench,groups=system:authenticated,threads=$THREADS,service=0s |
    python3 -c 'import json,sys; f=json.load(sys.stdin)["flows"][0]; print("%.0f %d %d" % (f["responsesPerSec"], f["lost"], f["rejectedTotal"]))'
}

$B/bench/fairgate-bench backend --listen 127.0.0.1:7611 --workers 4 --service-time 0s 2>/dev/null & pids+=($!)
sleep 0.3
read -r direct lost_d _ < <(rate 127.0.0.1:7611)

# fairgate in socket mode with N workers on 127.0.0.1:PORT, its HTTP endpoint
# on any free port; waits (bounded) until its control socket answers, and
# stops the script with the reason when it does not start.
start_socket_fairgate() { # port workers name
  $B/dataplane/fairgate --listen 127.0.0.1:$1 --workers $2 --backend 127.0.0.1:7611 --http 127.0.0.1:0 \
    --control-socket $WORK/$3.sock 2>$WORK/$3.log & pids+=($!)
  for _ in $(seq 100); do
    $B/control/fairgatectl --socket $WORK/$3.sock status >/dev/null 2>&1 && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  echo "fairgate ($2 worker(s) on 127.0.0.1:$1) did not start:" >&2; cat $WORK/$3.log >&2; exit 1
}

start_socket_fairgate 7610 1 s1
read -r sock lost_s rej_s < <(rate 127.0.0.1:7610)
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
WORKERS2=${WORKERS2:-2}
start_socket_fairgate 7610 "$WORKERS2" s2
read -r sock2 lost_s2 rej_s2 < <(rate 127.0.0.1:7610)
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true

dpdk=skipped
if [ -e /dev/net/tun ] && ip netns add "$NS" 2>/dev/null; then
  ip netns exec "$NS" ip link set lo up
  ip netns exec "$NS" $B/dataplane/fairgate --io dpdk --listen 192.0.2.2:7400 --backend 192.0.2.1:7501 \
    --http 127.0.0.1:0 --control-socket $WORK/d.sock -- --no-huge -m 512 --no-pci --no-shconf --file-prefix=$NS -l 0 \
    --vdev=net_tap0,iface=fgtap0 >/dev/null 2>&1 & pids+=($!)
  for _ in $(seq 100); do ip netns exec "$NS" ip link show fgtap0 >/dev/null 2>&1 && break; sleep 0.1; done
  ip netns exec "$NS" ip addr add 192.0.2.1/24 dev fgtap0
  ip netns exec "$NS" $B/bench/fairgate-bench backend --listen 192.0.2.1:7501 --workers 4 --service-time 0s 2>/dev/null & pids+=($!)
  sleep 0.5
  read -r dpdk lost_k rej_k < <(rate 192.0.2.2:7400 "$NS")
fi

echo "loadgen -> backend directly        : $direct req/s (lost $lost_d)"
echo "loadgen -> fairgate socket, 1 worker -> backend: $sock req/s (lost $lost_s, rejected $rej_s), ratio $(python3 -c "print(f'{$sock/$direct:.2f}')")"
echo "loadgen -> fairgate socket, $WORKERS2 workers -> backend: $sock2 req/s (lost $lost_s2, rejected $rej_s2), ratio $(python3 -c "print(f'{$sock2/$direct:.2f}')"), $(python3 -c "print(f'{$sock2/$sock:.2f}')")x one worker"
if [ "$dpdk" != skipped ]; then
  echo "loadgen -> fairgate DPDK tap -> backend: $dpdk req/s (lost $lost_k, rejected $rej_k), ratio $(python3 -c "print(f'{$dpdk/$direct:.2f}')")"
else
  echo "DPDK phase skipped (no /dev/net/tun or no network namespaces)"
fi
