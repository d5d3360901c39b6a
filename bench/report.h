/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report — a scenario's two runs (fairgate and the baseline without
 * fairness) turned into DIR/report.json, DIR/report.md and gnuplot plots
 * (DIR/plots/NAME.png and NAME.svg, FG_REPORT_PLOT_W x FG_REPORT_PLOT_H pixels),
 * with each flow's fair share per phase (max-min water-fill of its level's
 * seats over the flows' demands, common/seats/maxmin), the fairness error, Jain's
 * index and a verdict per flow (over the whole run, and after the scenario's
 * settle time when it has one), the scenario's expectations checked in both
 * runs, and the backends' limit against their real capacity (when the
 * learned limit came within 25% of it after each change, its steady-state
 * oscillation, the backends' utilisation) (docs/bench.md, "run").
 *
 * Thread contract: one thread; the series are only read.
 */
#ifndef FG_REPORT_H
#define FG_REPORT_H

#include "runseries.h"

#define FG_REPORT_PLOT_W 1200
#define FG_REPORT_PLOT_H 700

/* Writes every file under dir and prints the verdicts and the report's path
 * on stdout.  Returns 0, or -errno when a file cannot be written or gnuplot
 * fails (its message on stderr). */
int fg_report_write(const struct fg_scenario *scn, struct fg_series *const runs[2], const char *dir);

#endif
