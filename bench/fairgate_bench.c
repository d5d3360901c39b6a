/* SPDX-License-Identifier: Apache-2.0 */
/* fairgate-bench — load generator, backend emulator (and later the simulator
 * and micro-benchmarks); docs/bench.md. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "defs.h"
#include "duration.h"
#include "sim.h"

volatile sig_atomic_t fg_bench_stop; /* set by the signal handler */

static void on_signal(int sig)
{
	(void)sig;
	fg_bench_stop = 1;
}

void fg_bench_install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int64_t fg_bench_duration_arg(const char *flag, const char *value)
{
	int64_t ns;
	if (fg_duration_parse(value, strlen(value), &ns) || ns < 0) {
		fprintf(stderr, "fairgate-bench: %s: invalid duration \"%s\" (e.g. 20s, 250ms)\n", flag, value);
		exit(2);
	}
	return ns;
}

static int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("fairgate-bench %s\n", FG_VERSION);
	return 0;
}

/* The commands, with the line `usage` prints for each. */
static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "backend", fg_bench_backend, "emulated backend server (fairgate-bench backend --help)" },
	{ "loadgen", fg_bench_loadgen, "load generator with per-flow results (fairgate-bench loadgen --help)" },
	{ "sim", fg_bench_sim, "deterministic simulation of a scenario (fairgate-bench sim --help)" },
	{ "dataplane", fg_bench_dataplane, "the DPDK fast path in one process vs forward-only and librte_sched" },
	{ "memory", fg_bench_memory, "bytes per request slot, queue, tracked flow and level (fairgate-bench memory --help)" },
	{ "fill", fg_bench_fill, "fill a daemon with waiting requests, open loop (fairgate-bench fill --help)" },
	{ "run", fg_bench_run, "a load-test scenario, with and without fairness: report and plots (fairgate-bench run --help)" },
	{ "version", cmd_version, "the version of the tools" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: fairgate-bench COMMAND [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "fairgate-bench: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return 2;
}
