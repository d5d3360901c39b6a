/* SPDX-License-Identifier: Apache-2.0 */
/* cluster — cluster mode's member thread; see cluster.h. */
#include "cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "etcd.h"
#include "expfmt.h"
#include "ledger.h"
#include "reason.h"
#include "log.h"
#include "seqlock.h"

enum state { JOINING, JOINED, FALLBACK, DUPLICATE };
static const char *const state_names[] = { "joining", "joined", "fallback", "duplicate-member" };

/* Leases this process held before its current one (a member back from
 * fallback may still find its old records under them). */
#define OLD_LEASES 8

/* A member as one range read found it. */
struct member {
	char id[FG_CLUSTER_MEMBER_MAX];
	bool self;
	struct fg_cluster_record demand, grant; /* n == 0 without a (valid) record */
	bool has_demand, has_grant;
	bool grant_bad;        /* a grant record that does not parse: its seats are unknown */
};

/* One local level, as the thread tracks it between exchanges. */
struct level {
	char name[FG_LEVEL_NAME_MAX];
	uint32_t limit, executing, may_use;
	double sum, samples;   /* the period's demand samples */
	double demand;         /* smoothed */
	uint32_t target, grant, cap;
	bool retiring;         /* left the configuration, still executing: its grant outlives its seats */
	uint32_t mismatched;   /* members that publish another limit for the level (another configuration) */
};

/* What status and metrics show (under view_lock). */
struct view_member {
	char id[FG_CLUSTER_MEMBER_MAX];
	uint64_t generation;
	bool self;
	double *demand;        /* per view level; NaN: not run there */
	int64_t *grant;        /* per view level; -1: none */
};

struct fg_cluster {
	struct fg_cluster_opts o;
	char etcd[FG_CLUSTER_ETCD_MAX], name[FG_CLUSTER_NAME_MAX], member[FG_CLUSTER_MEMBER_MAX];
	char prefix[FG_ETCD_KEY_MAX], grant_prefix[FG_ETCD_KEY_MAX], demand_prefix[FG_ETCD_KEY_MAX],
		demand_key[FG_ETCD_KEY_MAX], grant_key[FG_ETCD_KEY_MAX];
	struct fg_clustershare *share;
	struct fg_etcd *etcd_client;
	pthread_t thread;
	bool stop;

	/* The thread's own. */
	struct fg_cluster_local local;     /* the latest copy */
	uint64_t generation;
	uint32_t n_levels;
	struct level levels[FG_MAX_LEVELS];
	struct member *members;            /* [FG_CLUSTER_MAX_MEMBERS] */
	uint32_t n_members, most_members;
	int64_t lease;                     /* 0: none */
	int64_t lease_ttl_s;               /* the TTL the current lease was granted with */
	int64_t moving_from;               /* a shorter lease the records are still under until a write
					    * under the current one succeeds (renewed meanwhile); 0: none */
	uint64_t records_until_ns;         /* this member's records may stand until then (local clock) */
	uint64_t joining_ns;               /* the last move to JOINING (start, or the lease found gone) */
	int64_t old_leases[OLD_LEASES];
	uint64_t lease_deadline_ns;        /* the lease may be gone from here on (local clock) */
	/* From the last read: */
	bool unknown_grants;               /* a grant record that could not be read: its seats are unknown */
	bool too_many_members;             /* more member ids than FG_CLUSTER_MAX_MEMBERS */
	int64_t self_grant_mod;            /* grant/<self>'s mod_revision (0: absent) */
	int64_t other_lease;               /* a record of this member id under a lease not this process's */
	uint64_t last_ok_ns;
	uint64_t joined_ns;                /* the last move to JOINED */
	uint64_t hold_until_ns;            /* stopping: keep the grants and the lease until then */
	enum state state;
	uint64_t exchanges, failures, conflicts;
	char last_error[512];
	struct fg_log_burst bad_records;   /* lines about records anyone with etcd access can write */

	/* Status. */
	pthread_mutex_t view_lock;
	struct {
		enum state state;
		uint64_t exchanges, failures, conflicts, last_ok_ns;
		int64_t lease, lease_ttl_s, revision;
		char last_error[512];
		uint32_t n_levels, n_members;
		struct level levels[FG_MAX_LEVELS];
		struct view_member *members; /* [FG_CLUSTER_MAX_MEMBERS], arrays [FG_MAX_LEVELS] each */
	} view;
};

/* ---- records ---- */

void fg_cluster_record_free(struct fg_cluster_record *r)
{
	free(r->levels);
	memset(r, 0, sizeof(*r));
}

int fg_cluster_parse_record(const char *text, size_t len, bool grant, struct fg_cluster_record *out, char *why,
			    size_t whylen)
{
	memset(out, 0, sizeof(*out));
	json_error_t jerr;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	int rc = 0;
	json_t *levels = root ? json_object_get(root, "levels") : NULL, *gen = root ? json_object_get(root, "generation") : NULL;
	if (!json_is_object(root) || !json_is_object(levels))
		rc = fg_reason(-EINVAL, why, whylen, "not an object with \"levels\"");
	else if (!grant && (!json_is_integer(gen) || json_integer_value(gen) < 0))
		rc = fg_reason(-EINVAL, why, whylen, "\"generation\" must be a whole number >= 0");
	else if (json_object_size(levels) > FG_MAX_LEVELS)
		rc = fg_reason(-EINVAL, why, whylen, "more than %u levels", FG_MAX_LEVELS);
	else if (json_object_size(levels) && !(out->levels = calloc(json_object_size(levels), sizeof(*out->levels))))
		rc = -ENOMEM;
	if (!rc && gen)
		out->generation = (uint64_t)json_integer_value(gen);
	const char *name;
	json_t *v;
	json_object_foreach(rc ? NULL : levels, name, v) {
		struct fg_cluster_record_level *l = &out->levels[out->n];
		if (!*name || strlen(name) >= sizeof(l->name)) {
			rc = fg_reason(-EINVAL, why, whylen, "a level name of 1..%u bytes", FG_LEVEL_NAME_MAX - 1);
			break;
		}
		snprintf(l->name, sizeof(l->name), "%s", name);
		if (grant) {
			if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > FG_MAX_SEAT_LIMIT) {
				rc = fg_reason(-EINVAL, why, whylen, "levels.%s: seats must be in [0, %u]", l->name, FG_MAX_SEAT_LIMIT);
				break;
			}
			l->grant = (uint32_t)json_integer_value(v);
		} else {
			json_t *lim = json_is_object(v) ? json_object_get(v, "limit") : NULL;
			json_t *dem = json_is_object(v) ? json_object_get(v, "demand") : NULL;
			double d = json_is_number(dem) ? json_number_value(dem) : -1;
			if (!json_is_integer(lim) || json_integer_value(lim) < 0 || json_integer_value(lim) > FG_MAX_SEAT_LIMIT ||
			    !(d >= 0 && d <= 1e9)) {
				rc = fg_reason(-EINVAL, why, whylen, "levels.%s: want {limit: 0..%u, demand: 0..1e9}", l->name,
					 FG_MAX_SEAT_LIMIT);
				break;
			}
			l->limit = (uint32_t)json_integer_value(lim);
			l->demand = d;
		}
		out->n++;
	}
	json_decref(root);
	return rc;
}

static const struct fg_cluster_record_level *record_level(const struct fg_cluster_record *r, const char *name)
{
	for (uint32_t i = 0; i < r->n; i++)
		if (!strcmp(r->levels[i].name, name))
			return &r->levels[i];
	return NULL;
}

/* ---- the exchange ---- */

static uint64_t call_timeout_ms(const struct fg_cluster_opts *o)
{
	uint64_t t = o->period_ns > 250 * FG_NS_PER_MS ? o->period_ns : 250 * FG_NS_PER_MS;
	if (t > o->lease_ttl_ns / 3)
		t = o->lease_ttl_ns / 3;
	return t / FG_NS_PER_MS;
}

/* Whether the thread's levels are the snapshot's shared ones, in order. */
static bool same_levels(const struct fg_cluster *c)
{
	const struct fg_cluster_local *lo = &c->local;
	uint32_t k = 0;
	for (uint32_t i = 0; i < lo->n && i < FG_MAX_LEVELS; i++) {
		if (lo->levels[i].exempt)
			continue;
		if (k == c->n_levels || c->levels[k].retiring != lo->levels[i].retiring ||
		    strncmp(c->levels[k].name, lo->levels[i].name, FG_LEVEL_NAME_MAX))
			return false;
		k++;
	}
	return k == c->n_levels;
}

/* The local levels from the allotter thread's latest snapshot — the
 * configuration's, then the retiring ones — matched by name to the
 * thread's own (a level that stays keeps its grant, demand and limit). */
static void follow_local(struct fg_cluster *c)
{
	if (!fg_seq_read(&c->share->local.seq, &c->share->local, &c->local, sizeof(c->local)))
		return;
	struct fg_cluster_local *lo = &c->local;
	if (lo->generation != c->generation || !same_levels(c)) {
		struct level *old = malloc(sizeof(c->levels));
		uint32_t n_old = c->n_levels, n = 0;
		if (!old)
			return;
		memcpy(old, c->levels, sizeof(c->levels));
		for (uint32_t i = 0; i < lo->n && i < FG_MAX_LEVELS; i++) {
			if (lo->levels[i].exempt)
				continue; /* not shared */
			struct level *l = &c->levels[n++];
			memset(l, 0, sizeof(*l));
			snprintf(l->name, sizeof(l->name), "%s", lo->levels[i].name);
			for (uint32_t k = 0; k < n_old; k++)
				if (!strcmp(old[k].name, l->name)) {
					*l = old[k];
					break;
				}
			l->retiring = lo->levels[i].retiring;
		}
		free(old);
		c->n_levels = n;
		c->generation = lo->generation;
	}
	for (uint32_t i = 0, k = 0; i < lo->n && i < FG_MAX_LEVELS; i++) {
		if (lo->levels[i].exempt)
			continue;
		struct level *l = &c->levels[k++];
		l->executing = lo->levels[i].executing;
		l->may_use = lo->levels[i].may_use;
		if (l->retiring)
			continue; /* its limit stays the last one it had */
		l->limit = lo->levels[i].limit;
		l->sum += lo->levels[i].demand;
		l->samples++;
	}
}

/* The period's average folded into the smoothed demand. */
static void smooth_demand(struct fg_cluster *c)
{
	for (uint32_t i = 0; i < c->n_levels; i++) {
		struct level *l = &c->levels[i];
		if (!l->samples)
			continue;
		double avg = l->sum / l->samples, decayed = FG_CLUSTER_DEMAND_DECAY * l->demand + (1 - FG_CLUSTER_DEMAND_DECAY) * avg;
		l->demand = avg > decayed ? avg : decayed;
		l->sum = l->samples = 0;
	}
}

static uint32_t fallback_share(const struct fg_cluster *c, uint32_t limit);
static uint64_t caps_deadline(const struct fg_cluster *c);

/* The caps of the configured levels, valid until the lease may expire. */
static void publish_caps(struct fg_cluster *c)
{
	struct fg_cluster_caps *caps = &c->share->caps;
	fg_seq_write_begin(&caps->seq);
	caps->expires_ns = c->state == JOINED ? caps_deadline(c) : 0;
	uint32_t n = 0;
	for (uint32_t i = 0; i < c->n_levels; i++) {
		if (c->levels[i].retiring)
			continue;
		memcpy(caps->levels[n].name, c->levels[i].name, sizeof(caps->levels[n].name));
		caps->levels[n].cap = c->levels[i].cap;
		caps->levels[n].fallback = fallback_share(c, c->levels[i].limit);
		n++;
	}
	caps->n = n;
	fg_seq_write_end(&caps->seq);
}

static void clear_members(struct fg_cluster *c)
{
	for (uint32_t i = 0; i < c->n_members; i++) {
		fg_cluster_record_free(&c->members[i].demand);
		fg_cluster_record_free(&c->members[i].grant);
	}
	c->n_members = 0;
}

static int by_id(const void *a, const void *b)
{
	return strcmp(((const struct member *)a)->id, ((const struct member *)b)->id);
}

/* The member of id in the list, added when new (NULL when full). */
static struct member *member_of(struct fg_cluster *c, const char *id)
{
	for (uint32_t i = 0; i < c->n_members; i++)
		if (!strcmp(c->members[i].id, id))
			return &c->members[i];
	if (c->n_members == FG_CLUSTER_MAX_MEMBERS)
		return NULL;
	struct member *m = &c->members[c->n_members++];
	memset(m, 0, sizeof(*m));
	snprintf(m->id, sizeof(m->id), "%s", id);
	return m;
}

static bool is_old_lease(const struct fg_cluster *c, int64_t lease)
{
	for (unsigned i = 0; i < OLD_LEASES; i++)
		if (lease && c->old_leases[i] == lease)
			return true;
	return false;
}

/* The members from the range reads of the grants and the demands.  A grant record
 * that cannot be read (its key or value malformed or past the bounds, or
 * its member one too many) makes every grant unknown: no seat is then
 * taken as room.  This member's own records must carry its lease (or an
 * earlier one of this process): any other lease means another process
 * runs under the same member id. */
/* A bad record is read again at every exchange (several a second) until
 * someone removes it: a few lines a window, the rest counted. */
static void log_bad_record(struct fg_cluster *c, const char *msg, const char *key, const char *why)
{
	uint64_t suppressed;
	if (fg_log_burst_allow(&c->bad_records, fg_now_ns(), &suppressed))
		fg_log(FG_LOG_WARN, msg, FG_LOG_STR("key", key), FG_LOG_STR("reason", why),
		       FG_LOG_UINT("suppressedBefore", suppressed));
}

static void read_members(struct fg_cluster *c, const struct fg_etcd_range *grants, const struct fg_etcd_range *demands)
{
	clear_members(c);
	c->unknown_grants = c->too_many_members = false;
	c->self_grant_mod = 0;
	c->other_lease = 0;
	size_t plen = strlen(c->prefix);
	for (size_t i = 0; i < grants->n + demands->n; i++) {
		const struct fg_etcd_kv *kv = i < grants->n ? &grants->kvs[i] : &demands->kvs[i - grants->n];
		const char *rest = strlen(kv->key) >= plen ? kv->key + plen : "";
		bool grant = i < grants->n;
		if (kv->bad && grant) {
			c->unknown_grants = true;
			log_bad_record(c, "cluster: an unreadable key or value in etcd, every grant counts as unknown",
				       kv->key[0] ? kv->key : "(malformed)", "unreadable");
			continue;
		}
		if (kv->bad || (!grant && strncmp(rest, "demand/", 7)))
			continue;
		const char *id = rest + (grant ? 6 : 7);
		if (!*id || strlen(id) >= FG_CLUSTER_MEMBER_MAX)
			continue;
		if (!strcmp(id, c->member)) {
			if (kv->lease != c->lease && !is_old_lease(c, kv->lease))
				c->other_lease = kv->lease ? kv->lease : -1;
			if (grant && (kv->lease == c->lease || is_old_lease(c, kv->lease)))
				c->self_grant_mod = kv->mod_revision; /* the next write replaces it, guarded by it */
		}
		struct member *m = member_of(c, id);
		if (!m) {
			c->too_many_members = true;
			c->unknown_grants |= grant;
			continue;
		}
		char why[128];
		struct fg_cluster_record *rec = grant ? &m->grant : &m->demand;
		fg_cluster_record_free(rec);
		bool ok = fg_cluster_parse_record(kv->value, kv->value_len, grant, rec, why, sizeof(why)) == 0;
		if (!ok) {
			fg_cluster_record_free(rec);
			log_bad_record(c, "cluster: a malformed record in etcd", kv->key, why);
		}
		*(grant ? &m->has_grant : &m->has_demand) = ok;
		if (grant)
			m->grant_bad = !ok;
	}
	/* This member always counts, with its own current demand. */
	struct member *self = member_of(c, c->member);
	if (self)
		self->self = true;
	else
		c->too_many_members = true;
	qsort(c->members, c->n_members, sizeof(c->members[0]), by_id);
	uint32_t live = 0;
	for (uint32_t i = 0; i < c->n_members; i++)
		live += c->members[i].self || c->members[i].has_demand;
	if (live > c->most_members)
		c->most_members = live;
}

/* clusterExpectedMembers, else the most members seen at once; 0 for a
 * member that never saw the cluster and was not told. */
static uint32_t expected_members(const struct fg_cluster *c)
{
	return c->o.expected_members ? c->o.expected_members : c->most_members;
}

/* A level's fallback share: floor(limit / expected members), at least 1 —
 * and 0 while the expected members are unknown (a member that never saw
 * the cluster cannot tell how many share it). */
static uint32_t fallback_share(const struct fg_cluster *c, uint32_t limit)
{
	uint32_t expected = expected_members(c);
	if (!expected)
		return 0;
	uint32_t share = limit / expected;
	return share ? share : (limit ? 1 : 0);
}

/* The caps hold until the lease may have expired: the earlier of the lease
 * deadline (its last keep-alive's send time + TTL - one period) and the
 * last successful exchange + TTL - one period (a member whose reads keep
 * failing must not run on old caps for ever). */
static uint64_t caps_deadline(const struct fg_cluster *c)
{
	uint64_t margin = c->o.lease_ttl_ns > c->o.period_ns ? c->o.lease_ttl_ns - c->o.period_ns : 0;
	uint64_t by_exchange = c->last_ok_ns + margin;
	return c->lease_deadline_ns < by_exchange ? c->lease_deadline_ns : by_exchange;
}

/* Targets and decisions for every level; the records to write.  Returns
 * whether any grant rises (the write must be guarded). */
static bool decide(struct fg_cluster *c, json_t *demand_rec, json_t *grant_rec, struct fg_ledger_decision *dec)
{
	bool guarded = false;
	/* For one lease TTL after this member (re)joined, members expected but
	 * not seen may still run at the fallback share (etcd was away for them
	 * too and they have not rejoined yet): their seats are not room. */
	uint32_t live = 0, missing = 0;
	for (uint32_t k = 0; k < c->n_members; k++)
		live += c->members[k].self || c->members[k].has_demand;
	if (c->state != JOINED || fg_now_ns() - c->joined_ns < c->o.lease_ttl_ns)
		missing = expected_members(c) > live ? expected_members(c) - live : 0;
	double *demands = malloc(sizeof(double) * (c->n_members ? c->n_members : 1));
	uint32_t *targets = malloc(sizeof(uint32_t) * (c->n_members ? c->n_members : 1));
	json_t *dl = json_object(), *gl = json_object();
	for (uint32_t i = 0; i < c->n_levels; i++) {
		struct level *l = &c->levels[i];
		if (!l->retiring) /* a retiring level is not shared any more: no demand for it */
			json_object_set_new(dl, l->name,
					    json_pack("{s:i, s:f}", "limit", (json_int_t)l->limit, "demand", l->demand));
		uint32_t n = 0, self = UINT32_MAX, mismatched = 0;
		uint64_t others = c->unknown_grants ? l->limit : 0;
		uint32_t own = 0;
		for (uint32_t k = 0; demands && targets && k < c->n_members; k++) {
			const struct member *m = &c->members[k];
			const struct fg_cluster_record_level *g = m->has_grant ? record_level(&m->grant, l->name) : NULL;
			if (m->self) {
				own = g ? g->grant : 0;
				self = n;
				demands[n++] = l->demand;
				continue;
			}
			if (g)
				others += g->grant; /* a grant counts while its record lives, whatever its demand */
			if (m->grant_bad)
				others += l->limit; /* unknown: no seat may be taken from the room */
			const struct fg_cluster_record_level *d = m->has_demand ? record_level(&m->demand, l->name) : NULL;
			if (d)
				demands[n++] = d->demand; /* members that run the level share it */
			if (d && d->limit != l->limit)
				mismatched++;
		}
		if (mismatched && !l->mismatched)
			fg_log(FG_LOG_WARN, "cluster: members run another limit for a level (configurations differ)",
			       FG_LOG_STR("priority_level", l->name), FG_LOG_UINT("limit", l->limit),
			       FG_LOG_UINT("members", mismatched));
		l->mismatched = mismatched;
		others += (uint64_t)missing * fallback_share(c, l->limit);
		if (l->retiring) {
			/* No share: its grant falls as its seats end. */
			l->target = 0;
			dec[i] = fg_ledger_decide(&(struct fg_ledger_level){
				.limit = l->limit, .grant = own, .others = others, .target = 0, .may_use = l->may_use });
		} else if (self == UINT32_MAX || fg_ledger_targets(l->limit, demands, n, targets)) {
			dec[i] = (struct fg_ledger_decision){ .grant = own, .local_limit = 0, .limit_after = 0 };
			l->target = 0;
		} else {
			l->target = targets[self];
			dec[i] = fg_ledger_decide(&(struct fg_ledger_level){
				.limit = l->limit, .grant = own, .others = others, .target = l->target, .may_use = l->may_use });
		}
		l->grant = own;
		guarded |= dec[i].guarded;
		json_object_set_new(gl, l->name, json_integer(dec[i].grant));
	}
	json_object_set_new(demand_rec, "generation", json_integer((json_int_t)c->generation));
	json_object_set_new(demand_rec, "levels", dl);
	json_object_set_new(grant_rec, "levels", gl);
	free(demands);
	free(targets);
	return guarded;
}

_Static_assert(FG_CLUSTER_MAX_MEMBERS == 256, "the message below says 256");

static void fail_exchange(struct fg_cluster *c, const char *what)
{
	c->failures++;
	if (strcmp(c->last_error, what))
		fg_log(FG_LOG_WARN, "cluster: an exchange with etcd failed", FG_LOG_STR("error", what));
	snprintf(c->last_error, sizeof(c->last_error), "%s", what);
}

/* Done with the current lease (a new one next time); remembered, since
 * records under it may still be read until etcd expires it. */
static void forget_lease(struct fg_cluster *c)
{
	if (!c->lease)
		return;
	memmove(c->old_leases + 1, c->old_leases, sizeof(c->old_leases[0]) * (OLD_LEASES - 1));
	c->old_leases[0] = c->lease;
	c->lease = 0;
}

/* The TTL this member's records live with: clusterLeaseTTL, or longer
 * when requests may run longer.  A member that dies leaves requests running
 * at the backends for up to its backendTimeout; its grant record, and so
 * its seats, must outlive them, or the others would take those seats while
 * they still run (scale-out.md "The invariant"). */
static int64_t records_ttl_s(const struct fg_cluster *c)
{
	uint64_t ns = c->local.backend_timeout_ns + c->o.period_ns;
	if (ns < c->o.lease_ttl_ns)
		ns = c->o.lease_ttl_ns;
	return (int64_t)((ns + FG_NS_PER_SEC - 1) / FG_NS_PER_SEC);
}

/* etcd says the lease is gone, so are this member's records, and the
 * others may have taken its seats: none until it has joined again (etcd is
 * reachable: that is the next exchange; if it is not, the fallback applies
 * after a TTL in JOINING). */
static void lease_lost(struct fg_cluster *c)
{
	forget_lease(c);
	c->records_until_ns = 0;
	c->state = JOINING;
	c->joining_ns = fg_now_ns();
	for (uint32_t i = 0; i < c->n_levels; i++)
		c->levels[i].cap = 0;
	fail_exchange(c, "the lease expired");
}

/* The lease: a new one when there is none (or the one held is shorter than
 * the records now need: a longer backendTimeout; the old one is renewed too
 * until the records are written under the new one), else a keep-alive.
 * 0 or -1. */
static int keep_lease(struct fg_cluster *c, uint64_t now)
{
	int64_t ttl = 0;
	int rc;
	if (c->lease && !c->moving_from && c->lease_ttl_s < records_ttl_s(c)) {
		c->moving_from = c->lease; /* the records move at the next successful write */
		forget_lease(c);
	}
	if (c->moving_from && fg_etcd_lease_keepalive(c->etcd_client, c->moving_from, &ttl) == -ENOENT)
		c->moving_from = 0;
	if (!c->lease) {
		int64_t id = 0;
		rc = fg_etcd_lease_grant(c->etcd_client, records_ttl_s(c), &id, &ttl);
		if (!rc) {
			c->lease = id;
			c->lease_ttl_s = ttl;
		}
	} else {
		rc = fg_etcd_lease_keepalive(c->etcd_client, c->lease, &ttl);
		if (rc == -ENOENT) {
			lease_lost(c);
			return -1;
		}
	}
	if (rc) {
		fail_exchange(c, fg_etcd_errmsg(c->etcd_client));
		return -1;
	}
	/* Measured from before the request was sent: etcd's clock started later. */
	c->lease_deadline_ns = now + (uint64_t)ttl * FG_NS_PER_SEC - (c->o.period_ns < (uint64_t)ttl * FG_NS_PER_SEC ? c->o.period_ns : 0);
	c->records_until_ns = now + (uint64_t)ttl * FG_NS_PER_SEC;
	return 0;
}

/* Another process runs under this member id: it takes nothing and writes
 * nothing until the other's records are gone. */
static void stand_aside(struct fg_cluster *c)
{
	if (c->state != DUPLICATE)
		fg_log(FG_LOG_ERROR, "cluster: duplicate member id: another process runs under it; this one takes no seats",
		       FG_LOG_STR("cluster", c->name), FG_LOG_STR("member", c->member));
	c->state = DUPLICATE;
	for (uint32_t i = 0; i < c->n_levels; i++)
		c->levels[i].cap = 0;
	snprintf(c->last_error, sizeof(c->last_error), "member id %s is in use by another process (lease %llx)",
		 c->member, (unsigned long long)c->other_lease);
}

static void exchange(struct fg_cluster *c)
{
	uint64_t now = fg_now_ns();
	if (__atomic_load_n(&c->hold_until_ns, __ATOMIC_ACQUIRE)) {
		/* Stopping: the grants stay as they are, only the lease lives on. */
		fg_etcd_set_deadline(c->etcd_client, 0);
		if (c->lease && !keep_lease(c, now))
			c->last_ok_ns = fg_now_ns();
		return;
	}
	/* No call may outlast the time the caps are good for (a member past
	 * it has fallen back before this exchange: cluster_main). */
	fg_etcd_set_deadline(c->etcd_client, c->state == JOINED ? caps_deadline(c) : 0);
	if (keep_lease(c, now))
		return;
	if (c->state == JOINED)
		fg_etcd_set_deadline(c->etcd_client, caps_deadline(c));
	/* Grants at one revision (the guard's), then demands: only these two
	 * prefixes are read, whatever else is kept under the cluster's. */
	struct fg_etcd_range rg, rd = { 0 };
	if (fg_etcd_range_prefix(c->etcd_client, c->grant_prefix, &rg) ||
	    fg_etcd_range_prefix(c->etcd_client, c->demand_prefix, &rd)) {
		fail_exchange(c, fg_etcd_errmsg(c->etcd_client));
		fg_etcd_range_free(&rg);
		fg_etcd_range_free(&rd);
		return;
	}
	read_members(c, &rg, &rd);
	int64_t revision = rg.revision;
	fg_etcd_range_free(&rg);
	fg_etcd_range_free(&rd);
	if (c->too_many_members) {
		fail_exchange(c, "more member ids under the cluster's prefix than fairgate reads (256)");
		return;
	}
	if (c->other_lease) {
		stand_aside(c);
		return;
	}

	struct fg_ledger_decision dec[FG_MAX_LEVELS];
	json_t *demand_rec = json_object(), *grant_rec = json_object();
	bool guarded = decide(c, demand_rec, grant_rec, dec);
	char *dtext = json_dumps(demand_rec, JSON_COMPACT), *gtext = json_dumps(grant_rec, JSON_COMPACT);
	json_decref(demand_rec);
	json_decref(grant_rec);
	bool ok = false;
	int rc = -ENOMEM;
	if (dtext && gtext) {
		/* The own grant record as read (a late write of an earlier
		 * exchange cannot land after this one), and for a rise, nothing
		 * under grant/ modified since the read. */
		struct fg_etcd_cmp cmps[2] = {
			{ .key = c->grant_key, .op = c->self_grant_mod ? FG_ETCD_MOD_EQUAL : FG_ETCD_ABSENT,
			  .revision = c->self_grant_mod },
			{ .key = c->grant_prefix, .prefix = true, .op = FG_ETCD_MOD_AT_MOST, .revision = revision },
		};
		struct fg_etcd_put puts[2] = { { c->demand_key, dtext, c->lease }, { c->grant_key, gtext, c->lease } };
		/* Nothing at all is written when a condition fails: a demand record
		 * written then could carry this lease over another process's
		 * records of the same id, and both would stand aside. */
		rc = fg_etcd_txn(c->etcd_client, cmps, guarded ? 2 : 1, puts, 2, NULL, 0, &ok);
	}
	free(dtext);
	free(gtext);
	if (rc || !ok) {
		/* Lost a race, or unknown whether it was written: only lower
		 * limits apply. */
		if (rc == -ENOENT) {
			lease_lost(c);
			return;
		}
		if (rc) {
			fail_exchange(c, fg_etcd_errmsg(c->etcd_client));
		} else {
			c->conflicts++;
		}
		for (uint32_t i = 0; i < c->n_levels; i++)
			if (dec[i].local_limit < c->levels[i].cap)
				c->levels[i].cap = dec[i].local_limit;
		if (rc)
			return;
	} else {
		for (uint32_t i = 0; i < c->n_levels; i++) {
			c->levels[i].cap = dec[i].limit_after;
			c->levels[i].grant = dec[i].grant;
		}
		if (c->moving_from) { /* the records are under the current lease now */
			fg_etcd_lease_revoke(c->etcd_client, c->moving_from);
			c->moving_from = 0;
		}
	}
	c->exchanges++;
	c->last_ok_ns = fg_now_ns();
	c->last_error[0] = 0;
	if (c->state != JOINED) {
		c->joined_ns = c->last_ok_ns;
		fg_log(FG_LOG_INFO, "cluster: joined", FG_LOG_STR("cluster", c->name), FG_LOG_STR("member", c->member),
		       FG_LOG_UINT("members", c->n_members), FG_LOG_STR("endpoint", fg_etcd_endpoint(c->etcd_client)));
	}
	c->state = JOINED;
	pthread_mutex_lock(&c->view_lock);
	c->view.revision = revision;
	pthread_mutex_unlock(&c->view_lock);
}

/* Every level at the fallback share. */
static void fall_back(struct fg_cluster *c)
{
	uint32_t expected = expected_members(c);
	if (c->state != FALLBACK)
		fg_log(FG_LOG_WARN, "cluster: etcd unreachable past the lease, the fallback share applies",
		       FG_LOG_STR("cluster", c->name), FG_LOG_STR("member", c->member),
		       FG_LOG_UINT("expected_members", expected), FG_LOG_STR("error", c->last_error));
	c->state = FALLBACK;
	forget_lease(c);
	/* While this member's records may still stand, the others count its
	 * grant, not its fallback share: no more than its last cap until then. */
	bool records = fg_now_ns() < c->records_until_ns;
	for (uint32_t i = 0; i < c->n_levels; i++) {
		uint32_t share = fallback_share(c, c->levels[i].limit);
		c->levels[i].cap = records && c->levels[i].cap < share ? c->levels[i].cap : share;
		c->levels[i].grant = 0;
	}
}

static void update_view(struct fg_cluster *c)
{
	pthread_mutex_lock(&c->view_lock);
	c->view.state = c->state;
	c->view.exchanges = c->exchanges;
	c->view.failures = c->failures;
	c->view.conflicts = c->conflicts;
	c->view.last_ok_ns = c->last_ok_ns;
	c->view.lease = c->lease;
	c->view.lease_ttl_s = c->lease ? c->lease_ttl_s : 0;
	memcpy(c->view.last_error, c->last_error, sizeof(c->view.last_error));
	c->view.n_levels = c->n_levels;
	memcpy(c->view.levels, c->levels, sizeof(c->levels[0]) * c->n_levels);
	c->view.n_members = c->n_members;
	for (uint32_t k = 0; k < c->n_members; k++) {
		const struct member *m = &c->members[k];
		struct view_member *v = &c->view.members[k];
		memcpy(v->id, m->id, sizeof(v->id));
		v->self = m->self;
		v->generation = m->self ? c->generation : m->demand.generation;
		for (uint32_t i = 0; i < c->n_levels; i++) {
			const struct fg_cluster_record_level *d = m->has_demand ? record_level(&m->demand, c->levels[i].name) : NULL;
			const struct fg_cluster_record_level *g = m->has_grant ? record_level(&m->grant, c->levels[i].name) : NULL;
			v->demand[i] = m->self ? c->levels[i].demand : d ? d->demand : NAN;
			v->grant[i] = m->self ? (int64_t)c->levels[i].grant : g ? (int64_t)g->grant : -1;
		}
	}
	pthread_mutex_unlock(&c->view_lock);
}

static void nap(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / FG_NS_PER_SEC), (long)(ns % FG_NS_PER_SEC) };
	nanosleep(&ts, NULL);
}

/* Demand is sampled this many times a period (the allotter thread samples every 10 ms). */
#define SAMPLES_PER_PERIOD 4

/* Whether the caps can no longer be trusted: a joined member past its
 * deadline (or without a lease), or one joining for a TTL without success. */
static bool lost(const struct fg_cluster *c, uint64_t now)
{
	return c->state == JOINED ? now >= caps_deadline(c) || !c->lease
				  : c->state == JOINING && now - c->joining_ns >= c->o.lease_ttl_ns;
}

static void *cluster_main(void *arg)
{
	struct fg_cluster *c = arg;
	uint64_t next_exchange = fg_now_ns();
	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		follow_local(c);
		bool changed = false;
		/* Before an exchange (its calls may take their whole time-out:
		 * the fallback must not wait for them) and at every nap.  A member
		 * paused past its deadline falls back here, to no more than its
		 * last caps while its records may stand, before it tries etcd. */
		if (lost(c, fg_now_ns())) {
			fall_back(c);
			publish_caps(c);
			update_view(c);
			changed = true;
		}
		uint64_t now = fg_now_ns();
		if (now >= next_exchange && c->generation) {
			next_exchange = now + c->o.period_ns;
			smooth_demand(c);
			exchange(c);
			changed = true;
		}
		if (lost(c, fg_now_ns()) || (changed && c->state == FALLBACK)) {
			fall_back(c);
			changed = true;
		}
		if (changed) {
			publish_caps(c);
			update_view(c);
		}
		nap(c->o.period_ns / SAMPLES_PER_PERIOD);
	}
	return NULL;
}

struct fg_cluster *fg_cluster_start(const struct fg_cluster_opts *o, struct fg_clustershare *share, char *why,
				    size_t whylen)
{
	struct fg_cluster *c = calloc(1, sizeof(*c));
	if (!c) {
		fg_reason(-EINVAL, why, whylen, "out of memory");
		return NULL;
	}
	c->o = *o;
	c->o.tls = (struct fg_etcd_opts){ 0 }; /* the etcd client keeps its own copies; the caller wipes its password */
	snprintf(c->etcd, sizeof(c->etcd), "%s", o->etcd);
	snprintf(c->name, sizeof(c->name), "%s", o->name);
	snprintf(c->member, sizeof(c->member), "%s", o->member);
	c->o.etcd = c->etcd;
	c->o.name = c->name;
	c->o.member = c->member;
	snprintf(c->prefix, sizeof(c->prefix), "/fairgate/%s/", c->name);
	snprintf(c->grant_prefix, sizeof(c->grant_prefix), "/fairgate/%s/grant/", c->name);
	snprintf(c->demand_prefix, sizeof(c->demand_prefix), "/fairgate/%s/demand/", c->name);
	snprintf(c->demand_key, sizeof(c->demand_key), "/fairgate/%s/demand/%s", c->name, c->member);
	snprintf(c->grant_key, sizeof(c->grant_key), "/fairgate/%s/grant/%s", c->name, c->member);
	c->share = share;
	c->joining_ns = fg_now_ns();
	c->bad_records = (struct fg_log_burst){ .window_ns = FG_CLUSTER_BAD_RECORD_LOG_WINDOW_NS,
						.max = FG_CLUSTER_BAD_RECORD_LOG_MAX };
	pthread_mutex_init(&c->view_lock, NULL);
	c->members = calloc(FG_CLUSTER_MAX_MEMBERS, sizeof(*c->members));
	c->view.members = calloc(FG_CLUSTER_MAX_MEMBERS, sizeof(*c->view.members));
	bool ok = c->members && c->view.members;
	for (uint32_t k = 0; ok && k < FG_CLUSTER_MAX_MEMBERS; k++) {
		c->view.members[k].demand = calloc(FG_MAX_LEVELS, sizeof(double));
		c->view.members[k].grant = calloc(FG_MAX_LEVELS, sizeof(int64_t));
		ok = c->view.members[k].demand && c->view.members[k].grant;
	}
	if (!ok)
		fg_reason(-EINVAL, why, whylen, "out of memory");
	else if (!(c->etcd_client = fg_etcd_new(c->etcd, (long)call_timeout_ms(o), &o->tls, why, whylen)))
		ok = false;
	else if (pthread_create(&c->thread, NULL, cluster_main, c)) {
		fg_reason(-EINVAL, why, whylen, "cannot start the cluster thread");
		ok = false;
	}
	if (!ok) {
		c->thread = 0;
		fg_cluster_stop(c, false);
		return NULL;
	}
	pthread_setname_np(c->thread, "fg-cluster");
	return c;
}

void fg_cluster_stop(struct fg_cluster *c, uint64_t hold_until_ns)
{
	if (!c)
		return;
	if (c->thread && hold_until_ns > fg_now_ns()) {
		fg_logf(FG_LOG_INFO, "cluster: keeping this member's grants %.1f s more, until the requests cut short "
			"at shutdown reach their backend time-out", (double)(hold_until_ns - fg_now_ns()) / 1e9);
		__atomic_store_n(&c->hold_until_ns, hold_until_ns, __ATOMIC_RELEASE);
		while (fg_now_ns() < hold_until_ns)
			nap(c->o.period_ns / SAMPLES_PER_PERIOD);
	}
	if (c->thread) {
		__atomic_store_n(&c->stop, true, __ATOMIC_RELEASE);
		pthread_join(c->thread, NULL);
	}
	if (c->lease && c->etcd_client && c->state == JOINED)
		fg_etcd_lease_revoke(c->etcd_client, c->lease);
	clear_members(c);
	for (uint32_t k = 0; c->view.members && k < FG_CLUSTER_MAX_MEMBERS; k++) {
		free(c->view.members[k].demand);
		free(c->view.members[k].grant);
	}
	free(c->view.members);
	free(c->members);
	fg_etcd_free(c->etcd_client);
	pthread_mutex_destroy(&c->view_lock);
	free(c);
}

/* ---- status and metrics ---- */

json_t *fg_cluster_status_json(struct fg_cluster *c)
{
	if (!c)
		return json_pack("{s:b}", "enabled", 0);
	pthread_mutex_lock(&c->view_lock);
	uint64_t now = fg_now_ns();
	json_t *levels = json_array(), *members = json_array();
	for (uint32_t i = 0; i < c->view.n_levels; i++) {
		const struct level *l = &c->view.levels[i];
		json_array_append_new(levels, json_pack("{s:s, s:i, s:i, s:i, s:i, s:f, s:i, s:i}", "name", l->name, "limit",
							(json_int_t)l->limit, "target", (json_int_t)l->target, "grant",
							(json_int_t)l->grant, "local_limit", (json_int_t)l->cap, "demand",
							l->demand, "executing", (json_int_t)l->executing,
							"members_with_another_limit", (json_int_t)l->mismatched));
	}
	for (uint32_t k = 0; k < c->view.n_members; k++) {
		const struct view_member *m = &c->view.members[k];
		json_t *d = json_object(), *g = json_object();
		for (uint32_t i = 0; i < c->view.n_levels; i++) {
			if (!isnan(m->demand[i]))
				json_object_set_new(d, c->view.levels[i].name, json_real(m->demand[i]));
			if (m->grant[i] >= 0)
				json_object_set_new(g, c->view.levels[i].name, json_integer(m->grant[i]));
		}
		json_array_append_new(members, json_pack("{s:s, s:i, s:b, s:o, s:o}", "id", m->id, "generation",
							 (json_int_t)m->generation, "self", m->self, "demand", d, "grant", g));
	}
	char lease[24];
	snprintf(lease, sizeof(lease), "%" PRIx64, (uint64_t)c->view.lease);
	json_t *doc = json_pack("{s:b, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:s, s:o, s:o}",
				"enabled", 1, "name", c->name, "member", c->member, "state", state_names[c->view.state],
				"etcd", c->etcd, "period_ms", (json_int_t)(c->o.period_ns / FG_NS_PER_MS), "lease_ttl_ms",
				(json_int_t)(c->o.lease_ttl_ns / FG_NS_PER_MS), "exchanges", (json_int_t)c->view.exchanges,
				"failures", (json_int_t)c->view.failures, "conflicts", (json_int_t)c->view.conflicts,
				"last_exchange_age_ms",
				c->view.last_ok_ns ? (json_int_t)((now - c->view.last_ok_ns) / FG_NS_PER_MS) : (json_int_t)-1, "lease",
				c->view.lease ? lease : "", "revision", (json_int_t)c->view.revision, "last_error",
				c->view.last_error, "members", members, "levels", levels);
	/* The TTL of the held lease: clusterLeaseTTL, or backendTimeout + a period when longer. */
	json_object_set_new(doc, "records_ttl_ms", json_integer((json_int_t)(c->view.lease_ttl_s * 1000)));
	pthread_mutex_unlock(&c->view_lock);
	return doc;
}

void fg_cluster_metrics(struct fg_cluster *c, struct fg_expfmt *e)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->view_lock);
	uint64_t now = fg_now_ns();
	fg_expfmt_family(e, "fairgate_cluster_members", FG_EXPFMT_GAUGE, "Members of this instance's cluster seen in the last exchange, itself included.");
	fg_expfmt_u64(e, "fairgate_cluster_members", NULL, 0, c->view.n_members);
	fg_expfmt_family(e, "fairgate_cluster_fallback", FG_EXPFMT_GAUGE, "1 while etcd cannot be reached past the lease and the fallback share applies.");
	fg_expfmt_u64(e, "fairgate_cluster_fallback", NULL, 0, c->view.state == FALLBACK);
	static const struct {
		const char *name, *help;
		size_t off;
	} counters[] = {
		{ "fairgate_cluster_exchanges_total", "Successful exchanges with etcd.", 0 },
		{ "fairgate_cluster_exchange_failures_total", "Exchanges with etcd that failed (unreachable, timed out, lease lost).", 1 },
		{ "fairgate_cluster_conflicts_total", "Guarded grant increases that lost a race with another member (retried next period).", 2 },
	};
	uint64_t values[3] = { c->view.exchanges, c->view.failures, c->view.conflicts };
	for (size_t i = 0; i < 3; i++) {
		fg_expfmt_family(e, counters[i].name, FG_EXPFMT_COUNTER, counters[i].help);
		fg_expfmt_u64(e, counters[i].name, NULL, 0, values[counters[i].off]);
	}
	fg_expfmt_family(e, "fairgate_cluster_last_exchange_age_seconds", FG_EXPFMT_GAUGE,
			 "Seconds since the last successful exchange with etcd (+Inf: none yet).");
	fg_expfmt_double(e, "fairgate_cluster_last_exchange_age_seconds", NULL, 0,
			 c->view.last_ok_ns ? (double)(now - c->view.last_ok_ns) / 1e9 : INFINITY);
	static const struct {
		const char *name, *help;
	} level_gauges[] = {
		{ "fairgate_cluster_level_limit_seats", "A level's cluster-wide limit (its nominal limit)." },
		{ "fairgate_cluster_level_target_seats", "This member's max-min share of the level's cluster-wide limit." },
		{ "fairgate_cluster_level_grant_seats", "This member's grant recorded in etcd." },
		{ "fairgate_cluster_level_local_limit_seats", "The limit this member's workers apply." },
		{ "fairgate_cluster_level_demand_seats", "This member's smoothed demand (seats executing + waiting)." },
	};
	for (size_t g = 0; g < sizeof(level_gauges) / sizeof(level_gauges[0]); g++) {
		fg_expfmt_family(e, level_gauges[g].name, FG_EXPFMT_GAUGE, level_gauges[g].help);
		for (uint32_t i = 0; i < c->view.n_levels; i++) {
			const struct level *l = &c->view.levels[i];
			struct fg_expfmt_label lab = { "priority_level", l->name };
			double v = g == 0 ? l->limit : g == 1 ? l->target : g == 2 ? l->grant : g == 3 ? l->cap : l->demand;
			fg_expfmt_double(e, level_gauges[g].name, &lab, 1, v);
		}
	}
	fg_expfmt_family(e, "fairgate_cluster_member_demand_seats", FG_EXPFMT_GAUGE, "Each member's published demand per level.");
	for (uint32_t k = 0; k < c->view.n_members; k++)
		for (uint32_t i = 0; i < c->view.n_levels; i++)
			if (!isnan(c->view.members[k].demand[i])) {
				struct fg_expfmt_label lab[2] = { { "member", c->view.members[k].id },
								  { "priority_level", c->view.levels[i].name } };
				fg_expfmt_double(e, "fairgate_cluster_member_demand_seats", lab, 2, c->view.members[k].demand[i]);
			}
	fg_expfmt_family(e, "fairgate_cluster_member_grant_seats", FG_EXPFMT_GAUGE, "Each member's grant per level as recorded in etcd.");
	for (uint32_t k = 0; k < c->view.n_members; k++)
		for (uint32_t i = 0; i < c->view.n_levels; i++)
			if (c->view.members[k].grant[i] >= 0) {
				struct fg_expfmt_label lab[2] = { { "member", c->view.members[k].id },
								  { "priority_level", c->view.levels[i].name } };
				fg_expfmt_u64(e, "fairgate_cluster_member_grant_seats", lab, 2, (uint64_t)c->view.members[k].grant[i]);
			}
	pthread_mutex_unlock(&c->view_lock);
}
