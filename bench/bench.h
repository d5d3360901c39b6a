/* SPDX-License-Identifier: Apache-2.0 */
/* bench — fairgate-bench subcommands and what they share. */
#ifndef FG_BENCH_H
#define FG_BENCH_H

#include <signal.h>
#include <stdint.h>

/* Service-time convention between the load generator and the emulated
 * backend: a request payload that starts with these 4 bytes carries the
 * service time in microseconds as a big-endian u32 right after them. */
#define FG_BENCH_SVC_MAGIC "FGSV"
#define FG_BENCH_SVC_LEN 8u

int fg_bench_backend(int argc, char **argv);
int fg_bench_loadgen(int argc, char **argv);
int fg_bench_dataplane(int argc, char **argv);
int fg_bench_memory(int argc, char **argv);
int fg_bench_fill(int argc, char **argv);
int fg_bench_run(int argc, char **argv);

/* Shared by the subcommands: a flag set by SIGINT/SIGTERM. */
extern volatile sig_atomic_t fg_bench_stop;
void fg_bench_install_signals(void);
/* Parse a duration flag value into ns (>= 0); exits 2 with a message if bad. */
int64_t fg_bench_duration_arg(const char *flag, const char *value);

#endif
