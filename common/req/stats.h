/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats — counters a worker writes and the control thread reads.
 *
 * Single writer (the owning worker), any number of readers: the writer does a
 * relaxed load+store (no atomic read-modify-write on the hot path), readers do
 * relaxed loads.  Values are eventually consistent snapshots.  One field runs
 * the other way: a level's answer_load, which the control thread writes
 * (control/load.h, fg_load_publish) and the worker reads.
 *
 * The flow table (flows[]) is a view, not an account: one row per flow seen
 * lately, for `fairgatectl status`.  Totals (worker counters, levels[]) never
 * come from it, so a row taken back from an idle flow loses only that row.
 *
 * Flow names are hostile input (user names, namespaces): a stored name is
 * always printable UTF-8 — valid multi-byte characters kept; invalid bytes,
 * control characters (C0, DEL, C1), bidi overrides, line separators and '\'
 * written as "\xNN" per byte — cut at a character boundary, never inside an
 * escape, and NUL-terminated within FG_FLOW_NAME_MAX.
 *
 * Ageing: an entry is taken back for a new flow when nothing of its flow waits
 * or executes and it was not looked up while a clock hand went round the table
 * FG_FLOW_IDLE_PASSES times (the hand moves FG_FLOW_HAND_STEP entries per
 * request of a flow not in the table, so a flood of new names ages the table
 * and a quiet server keeps its rows).  A new flow probes at most
 * FG_FLOW_MAX_PROBES entries from its home: it gets a free one there, or an
 * idle one if no entry was taken back in the last FG_FLOW_RECLAIM_EVERY
 * misses, or shares "(other)" (entry 0); its own later misses move the hand
 * and the reclaim countdown, so only active flows can keep it out for long.
 *
 * Readers of flows[]: an entry is published by storing its hash last
 * (release); a reused entry first gets an odd seq and hash 0, then its new
 * name and zeroed counters, then an even seq and its new hash.  Use
 * fg_stats_flow_read(), which copies an entry and checks seq around the copy:
 * it returns a name and counters of one flow, never a half-written name.  A
 * reader that loads hash (acquire) and reads name without that check sees a
 * whole name unless the entry is reused during its read; even then the bytes
 * are NUL-terminated, but they may mix two names.
 */
#ifndef FG_STATS_H
#define FG_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "adaptlimit.h"
#include "apfstats.h"
#include "defs.h"
#include "proto.h"

#define FG_STAT_ADD(field, n) __atomic_store_n(&(field), (field) + (n), __ATOMIC_RELAXED)
#define FG_STAT_SET(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)
#define FG_STAT_GET(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

#define FG_FLOW_MAX_PROBES 16u   /* entries a lookup looks at from the flow's home */
#define FG_FLOW_HAND_STEP 4u     /* entries the ageing hand passes per miss: a turn is 256 misses */
#define FG_FLOW_IDLE_PASSES 2u   /* passes of the hand without a lookup before an idle entry is taken */
/* At most one entry taken back per this many misses: more live flows than
 * entries then cost a fraction of a rewrite (name escaped, entry written)
 * per request, not one each. */
#define FG_FLOW_RECLAIM_EVERY 4u
_Static_assert((FG_FLOW_TABLE_SIZE & (FG_FLOW_TABLE_SIZE - 1)) == 0, "the flow table is indexed by mask");
_Static_assert(FG_FLOW_NAME_MAX % 8 == 0, "flow names are copied in 8-byte words");

struct fg_flow_stats {
	uint64_t hash; /* 0 = free entry; published last (release) */
	uint32_t seq;  /* odd while the entry is being given to another flow */
	uint16_t level;                /* index into fg_worker_stats.levels */
	union {
		char name[FG_FLOW_NAME_MAX];   /* "schema" or "schema/distinguisher", escaped */
		uint64_t name_words[FG_FLOW_NAME_MAX / 8];
	};
	uint64_t received, dispatched, responded, rejected;
	uint32_t waiting, executing;
	uint32_t seats_waiting, seats_executing;
	uint32_t weight;               /* the flow's weight (thousandths) as last classified */
	uint64_t usage_us;             /* UsageBased levels: decayed usage at this worker, seat-us per
					* sampling interval (common/fq/usage.h), as of its last dispatch or answer */
	uint64_t rejected_by[FG_REJECT__COUNT]; /* rejected, by reason ("why was I rejected") */
};

/* One flow as fg_stats_flow_read() copied it. */
struct fg_flow_snapshot {
	uint64_t hash;
	char name[FG_FLOW_NAME_MAX];
	uint16_t level;
	uint64_t received, dispatched, responded, rejected;
	uint64_t rejected_by[FG_REJECT__COUNT];
	int32_t waiting, executing;
	int32_t seats_waiting, seats_executing;
	uint32_t weight;
	uint64_t usage_us;
};

/* One priority level as a worker runs it (the runtime slot, which outlives
 * the configuration that created it while requests drain). */
struct fg_level_stats {
	uint8_t used;                  /* published last (release) */
	uint8_t live;                  /* in the current configuration */
	char name[FG_LEVEL_NAME_MAX];
	uint32_t limit, queues;
	uint64_t received, dispatched, responded, rejected;
	uint64_t rejected_by[FG_REJECT__COUNT];
	uint32_t waiting, executing, seats_in_use;
	uint64_t guess_ns;             /* the level's service-time guess (queueset.h; published periodically) */
	uint32_t seats_waiting;        /* seats the waiting requests ask: with seats_in_use, the demand
				        * borrowing integrates (common/runtime/borrower.h) */
	/* The queue set's virtual time (queueset.h), seat-ns wrapping: now,
	 * at the last dispatch, and how often it wrapped (flowcontrolMetrics). */
	uint64_t current_r, dispatch_r, r_wraps;
	/* UsageBased: arrivals of flows the usage table had no room for
	 * (common/fq/usage.h), published periodically. */
	uint64_t usage_overflowed;
	/* The other way (see the top): the LOAD attribute's value for this
	 * level's answers, FG_PROTO_LOAD_LEN wire bytes, relaxed store and load. */
	uint64_t answer_load;
};

/* One backend as this worker's pool sees it (backendpool.h). */
#define FG_WORK_CLASSES_EXPORTED (FG_APF_PAIRS * 5u) /* (level, schema) pairs x verb classes (classguess.h) */

struct fg_backend_stats {
	uint32_t outstanding;          /* seats executing there */
	uint32_t capacity;             /* this worker's part; 0: no limit */
	uint8_t state;                 /* enum fg_backend_state */
	uint8_t admin;                 /* enum fg_backend_admin, as this worker follows it */
	uint64_t dispatched;           /* requests sent there */
	uint64_t timeouts, ejections;
	uint64_t until_ns;             /* ejected: until when (the worker's clock) */
	uint64_t last_change_ns;       /* the state or admin state last changed (the worker's clock) */
	uint8_t stalled;               /* no answer for long while busy (backendpool.h): picked last */
	uint64_t stalls;               /* times it stalled */
	uint64_t latency_ns;           /* its learned answer latency (0: not learned yet) */
	/* serverConcurrencyLimitMode Adaptive (adaptlimit.h); 0 in Static mode. */
	uint32_t learned_limit;        /* this worker's part, seats (the capacity in force is lower during a probe) */
	uint64_t noload_ns;            /* its narrow requests' no-load latency */
	uint8_t limit_reason;          /* enum fg_adapt_reason of the last decision */
	uint64_t limit_moves[FG_ADAPT_REASONS]; /* decisions by reason */
};

/* Counters every datagram or poll touches come first (two cache lines),
 * then the rarer ones, then the tables. */
struct fg_worker_stats {
	uint64_t heartbeat_ns;                 /* fg_now_ns() of the loop's latest iteration (dataplane/fairgate.c) */
	uint64_t polls, busy_polls;            /* loop iterations; those that received datagrams */
	uint64_t rx_datagrams;
	uint64_t received;                     /* valid REQUESTs */
	uint64_t dispatched;
	uint64_t responded;
	uint64_t tx_datagrams;
	uint32_t waiting, executing, seats_in_use;
	uint32_t busy_ppm;                     /* busy_polls / polls over the last FG_BUSY_WINDOW_NS, ppm */
	uint64_t window_ns, window_polls, window_busy; /* owner only: where that window started */
	uint64_t rejected[FG_REJECT__COUNT];   /* answers to valid requests, by reason */
	uint64_t rx_malformed;                 /* failed to decode; by reason below */
	uint64_t malformed_by_err[FG_PROTO_ERR__COUNT];
	uint64_t rx_unexpected;                /* decodable but not for us (e.g. stray RESPONSE) */
	uint64_t responses_unmatched;          /* stale, forged or late responses */
	uint64_t invalid_rejected;             /* REJECT invalid to undecodable datagrams */
	uint64_t tx_failed;                    /* no buffer or the I/O layer refused */
	uint64_t answers_lost;                 /* owed REJECTs with no buffer, even from the reserve */
	uint64_t answers_unsent;               /* answers counted (responded, rejected) that the I/O refused */
	uint64_t answers_without_load;         /* answerLoad: answers with no room for the LOAD attribute */
	uint64_t backend_ejections;
	uint64_t held_for_backend;             /* admitted while every usable backend was full */
	uint64_t untrusted_requests;           /* from sources outside trustedSources: identity assigned */
	uint64_t cookie_challenges;            /* REJECT retry-with-cookie: the source must prove its address */
	uint64_t answers_forwarded;            /* backend answers passed to their request's worker */
	uint64_t handoff_refused;              /* a full ring: an answer for another worker dropped */
	uint64_t config_generation;            /* the configuration this worker follows */
	uint32_t config_error;                 /* errno of the last configuration it could not follow; 0 */
	uint64_t config_refused_generation;    /* the generation it last could not follow */
	uint64_t unfollowed_rejected;          /* requests refused unclassified while it could not follow */
	uint64_t allotment_changes;            /* new seat grants applied */
	/* The backends' capacity the levels' limits follow (issue 29;
	 * fg_backendpool_capacity: this worker's view, in seats or backends). */
	uint32_t capacity_usable, capacity_total;
	uint64_t capacity_changes;             /* times the usable part moved */
	uint32_t backends_usable;
	uint64_t buffers_in_use;               /* I/O buffers out of its pool (a shared pool: worker 0's figure) */
	uint64_t buffers_reserved;             /* of those, kept in this worker's answer reserve */
	uint64_t buffers_total;                /* its pool's size (a shared pool: worker 0's figure) */
	uint32_t flows_used;                   /* entries taken in flows[] (reused ones count once) */
	uint64_t flows_overflow;               /* requests folded into "(other)" */
	uint64_t flows_reclaimed;              /* idle entries given to a new flow */
	struct fg_flow_stats flows[FG_FLOW_TABLE_SIZE];
	/* Owner only.  The probe keys (flows[i].hash) and the passes of the
	 * ageing hand since each entry's last lookup, packed so that a lookup
	 * reads one or two cache lines instead of one entry per probe. */
	uint64_t flow_keys[FG_FLOW_TABLE_SIZE];
	uint8_t flow_idle[FG_FLOW_TABLE_SIZE];
	uint32_t flow_hand;
	uint32_t flow_reclaim_wait;            /* misses until an entry may be taken back */
	struct fg_level_stats levels[FG_MAX_LEVELS];
	uint32_t n_backends;                   /* backends[] entries in the followed configuration */
	struct fg_backend_stats backends[FG_MAX_BACKENDS];
	/* workEstimates PerClass: each ((level, schema) pair, verb class)'s
	 * service time as it is priced, by classguess index (0: none yet). */
	uint64_t work_estimate_ns[FG_WORK_CLASSES_EXPORTED];
	uint8_t apf_metrics;                   /* flowcontrolMetrics: apf and the levels' R are kept */
	/* Per (level, schema): the pairs' names always (the work estimates'
	 * classes), their series with flowcontrolMetrics. */
	struct fg_apf_stats apf;
};

#define FG_BUSY_WINDOW_NS 1000000000ull

/* One iteration of the worker loop; busy: it received datagrams.  Owner. */
static inline void fg_stats_poll(struct fg_worker_stats *s, uint64_t now, bool busy)
{
	FG_STAT_ADD(s->polls, 1);
	if (busy)
		FG_STAT_ADD(s->busy_polls, 1);
	if (now - s->window_ns >= FG_BUSY_WINDOW_NS) {
		uint64_t polls = s->polls - s->window_polls, busy_polls = s->busy_polls - s->window_busy;
		FG_STAT_SET(s->busy_ppm, (uint32_t)(polls ? busy_polls * 1000000u / polls : 0));
		s->window_ns = now;
		s->window_polls = s->polls;
		s->window_busy = s->busy_polls;
	}
}

/* The flow entry for `hash`, named from schema and dist[0..dist_len) (any
 * bytes) when it is new; entry 0 is "(other)" when no entry in reach may be
 * taken.  Up to 3/4 of the table free entries are taken at once; past it, one
 * entry per FG_FLOW_RECLAIM_EVERY misses, an idle one before a free one.
 * Owner thread only; a hit costs one probe run and one byte store. */
uint32_t fg_stats_flow(struct fg_worker_stats *s, uint64_t hash, uint16_t level, const char *schema,
		       const char *dist, uint16_t dist_len);

/* The key fg_stats_flow stores for `hash`: 0 (free) and 1 (other) are reserved. */
static inline uint64_t fg_stats_flow_key(uint64_t hash) { return hash <= 1 ? hash + 2 : hash; }

/* Start fetching what fg_stats_flow(hash) and the counters of its entry will
 * touch first (the key at its home and the entry there), or, for an entry
 * already known, its counters: for a burst whose later stage looks them up. */
static inline void fg_stats_flow_prefetch_entry(const struct fg_worker_stats *s, uint32_t i)
{
	__builtin_prefetch(&s->flows[i & (FG_FLOW_TABLE_SIZE - 1)].received, 1);
}
static inline void fg_stats_flow_prefetch(const struct fg_worker_stats *s, uint64_t hash)
{
	uint32_t home = (uint32_t)fg_stats_flow_key(hash) & (FG_FLOW_TABLE_SIZE - 1);
	__builtin_prefetch(&s->flow_keys[home]);
	fg_stats_flow_prefetch_entry(s, home);
}

/* Copy entry i into *out: true when it holds a flow, false when it is free or
 * was being reused during the copy (the next read sees the new flow).  Any
 * thread. */
bool fg_stats_flow_read(const struct fg_worker_stats *s, uint32_t i, struct fg_flow_snapshot *out);

void fg_stats_init(struct fg_worker_stats *s);

/* The daemon's counters summed over its workers (the readers' view: status,
 * /metrics, telemetry).  buffers_in_use and buffers_total are over the
 * pools (DPDK: one, which worker 0 reports; socket mode: one per worker),
 * buffers_in_use less the workers' answer reserves. */
struct fg_worker_totals {
	uint64_t rx_datagrams, rx_malformed, rx_unexpected, responses_unmatched;
	uint64_t malformed_by_err[FG_PROTO_ERR__COUNT];
	uint64_t received, dispatched, responded, rejected_total, invalid_rejected;
	uint64_t rejected[FG_REJECT__COUNT];
	uint64_t tx_datagrams, tx_failed, flows_overflow;
	uint64_t buffers_in_use, buffers_total, buffers_reserved, answers_lost, answers_unsent, answers_without_load;
	uint64_t backend_ejections, held_for_backend, untrusted_requests, cookie_challenges;
};

/* Any thread (relaxed reads, as for every reader). */
void fg_stats_totals(struct fg_worker_stats *const *s, unsigned n, struct fg_worker_totals *t);

/* Backend b over all workers: seats and counters summed, and how many
 * workers see it in each state (enum fg_backend_state: up, ejected,
 * probing).  Any thread (relaxed reads). */
struct fg_backend_total {
	uint64_t outstanding, capacity, timeouts, ejections, dispatched;
	uint64_t stalls;
	unsigned stalled;        /* workers that see it stalled */
	uint64_t latency_ns;     /* the largest learned latency among the workers */
	uint64_t learned_limit;  /* Adaptive: the learned limits summed (0: Static) */
	uint64_t noload_ns;      /* Adaptive: the largest no-load latency among the workers */
	uint8_t limit_reason;    /* Adaptive: the first worker's last decision */
	uint64_t limit_moves[FG_ADAPT_REASONS];
	unsigned in_state[3];
	uint64_t until_ns;       /* the latest ejection end among the workers that see it ejected */
	uint64_t last_change_ns; /* the latest change any worker saw (the workers' clock); 0: none */
};
void fg_stats_backend_total(struct fg_worker_stats *const *s, unsigned n, uint32_t b, struct fg_backend_total *t);

/* The seats the levels share now: serverConcurrencyLimit scaled by the
 * workers' usable capacity over their listed one (issue 29; in Adaptive
 * mode the learned limits' sum within the bounds, since listed is then the
 * limit's start), rounded up as the levels are. */
uint64_t fg_stats_seat_limit_in_force(struct fg_worker_stats *const *s, unsigned n, uint32_t seat_limit);

/* One priority level over all workers (the readers' view: status, telemetry). */
struct fg_level_total {
	char name[FG_LEVEL_NAME_MAX];
	uint32_t limit, queues;
	bool live;
	uint64_t seats_in_use, waiting, executing, seats_waiting;
	uint64_t guess_ns;       /* the largest service-time guess among the workers */
	uint64_t received, dispatched, responded, rejected;
	uint64_t usage_overflowed;
	uint64_t rejected_by[FG_REJECT__COUNT];
};

/* The levels of n workers summed by name, in the order the first worker that
 * has a level lists it; at most cap.  Returns how many.  Any thread (relaxed
 * reads, as for every reader). */
unsigned fg_stats_levels_total(struct fg_worker_stats *const *s, unsigned n, struct fg_level_total *out, unsigned cap);

#endif
