/*
 * config — the compiled, immutable dispatch configuration the workers read.
 *
 * The control thread builds one fg_config, publishes it with liburcu QSBR
 * (rcu_xchg_pointer) and frees the previous one after a grace period, so a
 * worker that took a pointer with rcu_dereference at the top of its loop
 * iteration may use it until its next quiescent state.  Nothing in it changes
 * after publication.
 */
#ifndef FG_CONFIG_H
#define FG_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <urcu-qsbr.h>

#include "defs.h"
#include "endpoint.h"

struct fg_backend_cfg {
	struct fg_endpoint ep;
	bool static_mac; /* DPDK mode: ep.mac given; otherwise resolved by ARP */
};

struct fg_config {
	struct rcu_head rcu;
	uint64_t generation;
	uint32_t seat_limit;
	uint32_t queues;             /* the level's queue set */
	uint32_t hand_size;
	uint32_t queue_length_limit; /* per queue */
	uint64_t queue_wait_ns;
	uint64_t backend_timeout_ns;
	uint32_t retry_after_ms;
	uint32_t n_backends;
	struct fg_backend_cfg backends[FG_MAX_BACKENDS];
};

#endif
