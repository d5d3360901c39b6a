/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats — counters a worker writes and the control thread reads.
 *
 * Single writer (the owning worker), any number of readers: the writer does a
 * relaxed load+store (no atomic read-modify-write on the hot path), readers do
 * relaxed loads.  Values are eventually consistent snapshots.
 */
#ifndef FG_STATS_H
#define FG_STATS_H

#include <stdint.h>

#include "defs.h"
#include "proto.h"

#define FG_STAT_ADD(field, n) __atomic_store_n(&(field), (field) + (n), __ATOMIC_RELAXED)
#define FG_STAT_SET(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)
#define FG_STAT_GET(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

struct fg_flow_stats {
	uint64_t hash; /* 0 = free entry; published last (release) */
	char name[FG_FLOW_NAME_MAX];   /* "schema" or "schema/distinguisher" */
	uint16_t level;                /* index into fg_worker_stats.levels */
	uint64_t received, dispatched, responded, rejected;
	uint32_t waiting, executing;
};

/* One priority level as a worker runs it (the runtime slot, which outlives
 * the configuration that created it while requests drain). */
struct fg_level_stats {
	uint8_t used;                  /* published last (release) */
	uint8_t live;                  /* in the current configuration */
	char name[FG_LEVEL_NAME_MAX];
	uint32_t limit, queues;
	uint64_t received, dispatched, responded, rejected;
	uint32_t waiting, executing, seats_in_use;
};

struct fg_worker_stats {
	uint64_t rx_datagrams;
	uint64_t rx_malformed;                 /* failed to decode; by reason below */
	uint64_t malformed_by_err[FG_PROTO_ERR__COUNT];
	uint64_t rx_unexpected;                /* decodable but not for us (e.g. stray RESPONSE) */
	uint64_t responses_unmatched;          /* stale, forged or late responses */
	uint64_t received;                     /* valid REQUESTs */
	uint64_t dispatched;
	uint64_t responded;
	uint64_t rejected[FG_REJECT__COUNT];   /* answers to valid requests, by reason */
	uint64_t invalid_rejected;             /* REJECT invalid to undecodable datagrams */
	uint64_t tx_datagrams;
	uint64_t tx_failed;                    /* no buffer or the I/O layer refused */
	uint64_t answers_lost;                 /* owed REJECTs with no buffer, even from the reserve */
	uint64_t backend_ejections;
	uint64_t held_for_backend;             /* admitted while every usable backend was full */
	uint64_t untrusted_requests;           /* from sources outside trustedSources: identity assigned */
	uint64_t cookie_challenges;            /* REJECT retry-with-cookie: the source must prove its address */
	uint64_t handed_off, taken_over;       /* requests to/from other workers' queues */
	uint64_t answers_forwarded;            /* backend answers passed to their request's worker */
	uint64_t handoff_refused;              /* a full ring: request rejected, answer dropped */
	uint64_t config_generation;            /* the configuration this worker follows */
	uint32_t config_error;                 /* errno of the last configuration it could not follow; 0 */
	uint64_t config_refused_generation;    /* the generation it last could not follow */
	uint64_t allotment_changes;            /* new seat grants applied */
	uint32_t backends_usable;
	uint32_t waiting, executing, seats_in_use;
	uint64_t buffers_in_use;               /* I/O buffers out of the pool (worker 0: the shared pool's) */
	uint64_t buffers_reserved;             /* of those, kept in this worker's answer reserve */
	uint32_t flows_used;                   /* entries taken in flows[] */
	uint64_t flows_overflow;               /* requests folded into "(other)" */
	struct fg_flow_stats flows[FG_FLOW_TABLE_SIZE];
	/* The owner's probe keys: flows[i].hash, packed so that a lookup reads
	 * one or two cache lines instead of one entry per probe. */
	uint64_t flow_keys[FG_FLOW_TABLE_SIZE];
	struct fg_level_stats levels[FG_MAX_LEVELS];
};

/* The flow entry for `hash` (created with `name` on first sight); entry 0 is
 * "(other)", used once the table is 3/4 full.  Owner thread only. */
uint32_t fg_stats_flow(struct fg_worker_stats *s, uint64_t hash, uint16_t level, const char *schema,
		       const char *dist, uint16_t dist_len);

void fg_stats_init(struct fg_worker_stats *s);

#endif
