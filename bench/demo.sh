#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fairgate demo: builds, then runs the elephant-and-mice scenario
# (bench/scenarios/elephant-and-mice.yaml) through `fairgate-bench run`:
# fairgate in kernel-socket mode on loopback with its embedded default
# configuration, two emulated backends, a flooding tenant and a light one —
# once with fairgate's fairness and once with a baseline without it (one FIFO
# queue), 15 s each.  Ends with a verdict per tenant and the path of the
# report (report.md with its plots, report.json).
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/install-deps
if [ ! -f build/build.ninja ]; then meson setup build >/dev/null; fi
ninja -C build >/dev/null

OUT=${DEMO_OUT:-/tmp/fairgate-demo-report-$(date +%Y%m%d-%H%M%S)}
echo "elephant-and-mice: tenant-heavy floods with 200 closed-loop clients, tenant-light sends from 2;"
echo "both land in global-default of the embedded default configuration; every request takes 20 ms."
echo "Run 1: fairgate.  Run 2: the baseline without fairness (one FIFO queue, the same 16 seats)."
exec build/bench/fairgate-bench run bench/scenarios/elephant-and-mice.yaml --out "$OUT"
