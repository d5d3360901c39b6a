/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dataplane_int — what the two modes of `fairgate-bench dataplane` share
 * (dataplane.c: generator lcore, forward-only, rte_sched; dataplane_scaling.c:
 * pre-generated windows and an in-worker backend reflector): the addresses of
 * the emulated client and backends, the request frames of F flows, the
 * backend's answer, the EAL set-up and the fairgate workers on a ring port.
 *
 * Thread contract: set-up and tear-down on the main lcore while no worker
 * runs; dp_backend_answer from any thread on a frame it owns;
 * dp_run_fairgate_lane on the worker's own lcore.
 */
#ifndef FG_BENCH_DATAPLANE_INT_H
#define FG_BENCH_DATAPLANE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "dpdk_io.h"
#include "netpkt.h"
#include "workerset.h"

#define DP_FRAME_LEN 200u
#define DP_BACKENDS 4u
#define DP_MAX_WORKERS 8u
#define DP_BACKEND_PORT 7501u /* host order */

extern const uint8_t dp_client_mac[6];

/* The emulated network of one ring port: fairgate's address, the client's,
 * the backends', and one request frame per flow (flow f: user-f, request id
 * f, source port 10000 + f % 50000), addressed to fg_mac. */
struct dp_net {
	uint8_t fg_mac[6];
	uint32_t fg_ip, client_ip, backend_ip[DP_BACKENDS]; /* network order */
	uint8_t backend_mac[DP_BACKENDS][6];
	uint16_t fg_port;                                    /* network order */
	unsigned flows;
	uint8_t *templates;                                  /* flows x DP_FRAME_LEN */
	uint16_t template_len;
};

/* The addresses, fairgate's MAC from port, and the flows' frames: 0 or
 * -ENOMEM.  dp_net_fini(NULL or a zeroed one) is a no-op. */
int dp_net_init(struct dp_net *net, uint16_t port, unsigned flows);
void dp_net_fini(struct dp_net *net);

/* The backend's answer at once: the request frame f (to one of the
 * backends) becomes, in place, the same message as a RESPONSE from that
 * backend to fairgate.  Returns the backend's index. */
unsigned dp_backend_answer(const struct dp_net *net, uint8_t *frame, const struct fg_net_frame *f);

/* EAL with these lcores (the --lcores syntax), no hugepages, mem_mb of
 * memory, no telemetry, a file prefix of this process, its runtime
 * directory removed at once (it stays empty): true when up; false after a
 * message saying what a start needs (lcores, memory), with EAL's last lines
 * instead of its whole log (and nothing left under /var/run/dpdk). */
bool dp_eal_init(const char *lcores, unsigned mem_mb, unsigned lcores_needed);
/* What dp_eal_init needs, to stderr (also after a set-up that ran out of
 * EAL memory). */
void dp_print_needs(const char *lcores, unsigned mem_mb, unsigned lcores_needed);

/* The real fairgate on a probed port: the bootstrap FlowSchemas, seatLimit
 * 100 000, the four backends (static MACs, the client's sources trusted),
 * `workers` workers of max_requests slots on the port's lanes. */
struct dp_fairgate {
	struct fg_dpdk_io *io;
	struct fg_config *cfg;
	struct fg_workerset ws;
};
int dp_fairgate_create(struct dp_fairgate *fg, const struct dp_net *net, uint16_t port, unsigned workers,
		       uint32_t max_requests);
/* Answers what the workers still hold, frees them, the io and the config. */
void dp_fairgate_destroy(struct dp_fairgate *fg);

/* A worker lcore's loop until *stop: fg_worker_poll with metrics following
 * *metrics_on; *busy_cycles (relaxed stores, the main lcore reads them) adds
 * the polls that received datagrams or took hand-offs. */
void dp_run_fairgate_lane(struct fg_worker *w, const struct fg_config *cfg, const int *stop,
			  const int *metrics_on, uint64_t *busy_cycles);

/* Min and median of n figures (sorted in place); 0 for none. */
void dp_min_median(double *v, unsigned n, double *min, double *median);

int fg_bench_dataplane_scaling(int argc, char **argv);

#endif
