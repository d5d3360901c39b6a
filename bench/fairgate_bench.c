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

volatile int fg_bench_stop;

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

static void usage(FILE *f)
{
	fprintf(f, "usage: fairgate-bench COMMAND [options]\n\n"
		   "commands:\n"
		   "  backend   emulated backend server (fairgate-bench backend --help)\n"
		   "  loadgen   load generator with per-flow results (fairgate-bench loadgen --help)\n"
		   "  sim       deterministic simulation of a scenario (fairgate-bench sim --help)\n"
		   "  dataplane the DPDK fast path in one process vs forward-only and librte_sched\n"
		   "  version\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "backend"))
		return fg_bench_backend(argc - 1, argv + 1);
	if (!strcmp(argv[1], "loadgen"))
		return fg_bench_loadgen(argc - 1, argv + 1);
	if (!strcmp(argv[1], "dataplane"))
		return fg_bench_dataplane(argc - 1, argv + 1);
	if (!strcmp(argv[1], "sim"))
		return fg_bench_sim(argc - 1, argv + 1);
	if (!strcmp(argv[1], "version")) {
		printf("fairgate-bench %s\n", FG_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "fairgate-bench: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return 2;
}
