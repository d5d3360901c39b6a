/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flowcontrol — Kubernetes flowcontrol.apiserver.k8s.io/v1 FlowSchema and
 * PriorityLevelConfiguration objects, and fairgate's own fairgate.io/v1alpha1
 * FairSharing objects (a level's fair-sharing policy and its flows' weights):
 * validation with the Kubernetes rules, the mandatory and bootstrap objects,
 * derived concurrency limits, and a compiled classifier that also gives each
 * request its flow's weight (docs/configuration.md, docs/apf-facts.md §1, §7).
 *
 * An fg_fc_set is a set of objects keyed by (kind, name), kept as JSON in
 * normalized form: decoded against the v1 types (unknown fields dropped, after
 * a warning), with the v1 defaults filled in.  Objects enter a set only
 * through fg_fc_set_apply*, which validates each one as Kubernetes does
 * (every error at once) and changes nothing on any error.  fg_fc_compile
 * turns a set into an immutable fg_fc_config: schemas in matching order with
 * their rules compiled, a subject index over them (each exact user, group,
 * service-account and service-account-namespace key -> the schemas having it,
 * plus the schemas with a wildcard subject), levels with derived limits.
 * Classification allocates nothing, reads only the compiled config, and tests
 * only the schemas the request's keys name, so its cost does not grow with
 * the schemas it cannot match.
 *
 * The module's files: flowcontrol_objects.c (the set), flowcontrol_validate.c
 * (decoding, defaulting, validation), flowcontrol_compile.c, and
 * flowcontrol_classify.c (matching, explain); flowcontrol_int.h says more.
 *
 * Thread contract: sets are used by one thread (the control thread or a
 * tool); a compiled config is immutable and may be read by any thread.
 */
#ifndef FG_FLOWCONTROL_H
#define FG_FLOWCONTROL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "settings.h"
#include "usage.h"

#define FG_FC_API_VERSION "flowcontrol.apiserver.k8s.io/v1"
#define FG_FC_FAIRSHARING_API_VERSION "fairgate.io/v1alpha1" /* FairSharing objects */
#define FG_FC_MAX_PRECEDENCE 10000
#define FG_FC_MAX_OBJECTS 4096 /* of all kinds in one set */
#define FG_FC_MAX_QUEUES 10000000 /* validation.go priorityLevelConfigurationQueuingMaxQueues */

/* The v1 defaulters' values (k8s.io/api/flowcontrol/v1 defaults.go); the
 * only place they are spelled. */
#define FG_FC_DEFAULT_MATCHING_PRECEDENCE 1000
#define FG_FC_DEFAULT_SHARES 30
#define FG_FC_DEFAULT_QUEUES 64
#define FG_FC_DEFAULT_HAND_SIZE 8
#define FG_FC_DEFAULT_QUEUE_LENGTH_LIMIT 50

/* FairSharing (fairgate.io/v1alpha1): one per priority level, named after
 * it; without one a level is MaxMin with every flow's weight 1.  The
 * defaults and bounds of its fields (docs/configuration.md, "FairSharing"): */
#define FG_FC_DEFAULT_USAGE_HALF_LIFE_NS (5ull * 60 * 1000000000)  /* usageHalfLifeTime 5m */
#define FG_FC_DEFAULT_USAGE_SAMPLING_NS 1000000000ull             /* usageSamplingInterval 1s */
#define FG_FC_RESET_INACTIVITY_HALF_LIVES 10u                     /* resetInactivityPeriod default */
#define FG_FC_MAX_USAGE_DURATION_NS (8760ull * 3600 * 1000000000) /* half-life, sampling: at most 8760h */
/* resetInactivityPeriod: at most 10 x the longest half-life, so that a
 * defaulted value applies back. */
#define FG_FC_MAX_RESET_INACTIVITY_NS (FG_FC_RESET_INACTIVITY_HALF_LIVES * FG_FC_MAX_USAGE_DURATION_NS)
#define FG_FC_MAX_FLOW_WEIGHTS 10000u         /* spec.flowWeights entries of one object */
#define FG_FC_MAX_FLOW_WEIGHTS_TOTAL 100000u  /* entries of all FairSharing objects of a set */
#define FG_FC_MAX_DISTINGUISHER 511u          /* bytes of a flowWeights entry's distinguisher */

enum fg_fc_kind { FG_FC_FLOWSCHEMA = 0, FG_FC_PRIORITYLEVEL = 1, FG_FC_FAIRSHARING = 2 };
#define FG_FC_N_KINDS 3
/* The kinds in the order a listing (diff, `get all`) gives them: levels
 * first, as the others refer to them. */
extern const enum fg_fc_kind fg_fc_kind_order[FG_FC_N_KINDS];

/* --- the object set ---------------------------------------------------- */

struct fg_fc_set;

/* An empty set. */
struct fg_fc_set *fg_fc_set_new(void);
void fg_fc_set_free(struct fg_fc_set *s);
struct fg_fc_set *fg_fc_set_copy(const struct fg_fc_set *s);
/* A copy that shares the objects with s (reference counted): an object in a
 * set is never changed in place, only replaced or removed whole, so this
 * costs the two tables only (the configuration history keeps these). */
struct fg_fc_set *fg_fc_set_share(const struct fg_fc_set *s);

/* Kubernetes' bootstrap objects (mandatory + suggested), the default config. */
struct fg_fc_set *fg_fc_set_bootstrap(void);

/* A file's one meaning (docs/configuration.md): a set without FlowSchemas
 * and PriorityLevelConfigurations stands for the bootstrap ones, which this
 * adds (its FairSharing objects stay).  0, or -ENOMEM (s unchanged). */
int fg_fc_set_or_bootstrap(struct fg_fc_set *s);

struct fg_fc_apply_opts {
	bool strict;                /* unknown fields are errors (kubectl --validate=strict) */
	struct fg_errors *warnings; /* unknown fields when not strict; may be NULL */
	struct fg_fc_set *input;    /* when not NULL, also receives the input's objects (what a change names) */
};

/*
 * Parse a document (JSON, or YAML with one or more documents; single objects
 * or List kinds, e.g. a kubectl dump with metadata and status) and add or
 * replace its FlowSchema, PriorityLevelConfiguration and FairSharing objects in
 * the set.
 * A FairgateSettings object is applied to *settings when settings is not NULL
 * (and refused otherwise).  Every problem goes to errs, each naming the object
 * and the field path in Kubernetes' words; on any error nothing changes.
 * Returns the number of objects applied, or -EINVAL.  fg_fc_set_apply is the
 * same with default options (unknown fields dropped without a word).
 */
int fg_fc_set_apply_opts(struct fg_fc_set *s, const uint8_t *buf, size_t len, struct fg_settings *settings,
			 const struct fg_fc_apply_opts *opts, struct fg_errors *errs);
int fg_fc_set_apply(struct fg_fc_set *s, const uint8_t *buf, size_t len, struct fg_settings *settings,
		    struct fg_errors *errs);

/* Exchange the contents of two sets. */
void fg_fc_set_swap(struct fg_fc_set *a, struct fg_fc_set *b);

/* Number of objects in the set. */
size_t fg_fc_set_size(const struct fg_fc_set *s);

/* Remove an object; 0 or -ENOENT. */
int fg_fc_set_delete(struct fg_fc_set *s, enum fg_fc_kind kind, const char *name);

/* Add the built-in copies of the mandatory objects (exempt and catch-all, of
 * both kinds) that are missing; returns how many were added. */
unsigned fg_fc_set_add_mandatory(struct fg_fc_set *s);

/* "exempt" and "catch-all" (of either Kubernetes kind). */
bool fg_fc_is_mandatory(const char *name);
/* The same for an object of a kind: FairSharing objects are never mandatory. */
bool fg_fc_is_mandatory_object(enum fg_fc_kind kind, const char *name);

/* One warning per FlowSchema whose level does not exist (it is Dangling and
 * matches nothing, as in Kubernetes), per FairSharing object named after no
 * level (Dangling: no effect) or after a level that does not queue, and per
 * flowWeights entry naming a schema that does not exist or sends to another
 * level (the entry has no effect); returns how many. */
unsigned fg_fc_set_warn_dangling(const struct fg_fc_set *s, struct fg_errors *warnings);

/* The objects of one kind (or one object when name is not NULL) as a JSON
 * array sorted by name, FlowSchemas and FairSharing objects with the status
 * Kubernetes' controller writes to a FlowSchema (the Dangling condition);
 * NULL if the named object does not exist. */
json_t *fg_fc_set_get(const struct fg_fc_set *s, enum fg_fc_kind kind, const char *name);

/* Parse "FlowSchema", "flowschemas", "fs", "PriorityLevelConfiguration",
 * "prioritylevelconfigurations", "plc", "pl", "FairSharing", "fairsharings",
 * "fsh" ... ; -1 if unknown. */
int fg_fc_kind_parse(const char *s);
const char *fg_fc_kind_name(enum fg_fc_kind k);
/* The apiVersion objects of the kind carry. */
const char *fg_fc_kind_api_version(enum fg_fc_kind k);

/* json_dumps flags for reals as people write them: FairSharing weights are
 * thousandths, so 0.1 prints "0.1", not "0.10000000000000001". */
#define FG_FC_JSON_REALS JSON_REAL_PRECISION(15)

/* --- the compiled configuration ---------------------------------------- */

/* A level's fair-sharing policy (a fairgate.io/v1alpha1 FairSharing object
 * named after the level; MaxMin without one). */
enum fg_fc_policy { FG_FC_POLICY_MAXMIN = 0, FG_FC_POLICY_USAGE_BASED = 1 };

/* Flow weights are compiled to thousandths: FG_FC_WEIGHT_ONE is weight 1,
 * the range is [1, FG_FC_WEIGHT_MAX] (weights 0.001 to 1000). */
#define FG_FC_WEIGHT_ONE 1000u
#define FG_FC_WEIGHT_MAX 1000000u

enum fg_fc_distinguisher { FG_FC_DIST_NONE = 0, FG_FC_DIST_BY_USER, FG_FC_DIST_BY_NAMESPACE };

struct fg_fc_level {
	char *name;
	bool exempt, reject;
	uint32_t shares, lendable_percent;
	int32_t borrowing_percent;          /* -1: unlimited */
	uint32_t queues, hand_size, queue_length_limit;
	/* Derived (docs/apf-facts.md §1.3): */
	uint32_t nominal, lendable, borrowing, min, max;
	uint32_t max_seats;                 /* per-request width cap: maxSeats (queue levels), min(limit, 10)
					     * (reject levels), FG_EXEMPT_MAX_SEATS (exempt); workest.h */
	uint32_t limit;                     /* nominal; the limit in force moves with borrowing
					     * (fg_config_level_limit, common/runtime/borrower.h) */
	/* Fair sharing (the level's FairSharing object; defaults without one): */
	enum fg_fc_policy policy;
	bool weighted;                      /* some flow of the level has a weight other than 1 */
	uint64_t usage_half_life_ns;        /* UsageBased: half-life of decayed usage */
	uint64_t usage_sampling_ns;         /* UsageBased: how often usage is folded in */
	uint64_t reset_inactivity_ns;       /* UsageBased: an idle flow's usage is forgotten after this */
};

/* A UsageBased level's parameters as the queue set takes them. */
static inline struct fg_usage_params fg_fc_level_usage_params(const struct fg_fc_level *l)
{
	return (struct fg_usage_params){ .half_life_ns = l->usage_half_life_ns, .sampling_ns = l->usage_sampling_ns,
					 .reset_ns = l->reset_inactivity_ns };
}

struct fg_fc_schema;                         /* compiled rules, opaque */
struct fg_fc_index;                          /* subject -> candidate schemas, opaque */

struct fg_fc_config {
	uint32_t server_limit;
	uint32_t n_levels, n_schemas;
	struct fg_fc_level *levels;
	struct fg_fc_schema **schemas;           /* matching order */
	char **schema_names;
	uint32_t *schema_level;
	enum fg_fc_distinguisher *schema_dist;
	uint32_t catch_all_schema;
	const struct fg_fc_index *index;         /* the schemas that can match a request (flowcontrol_match.h) */
};

/* Compile a set (its objects were validated on the way in; the mandatory
 * objects are added when missing; the set's objects are read, not copied)
 * with the server concurrency limit.  NULL
 * with "out of memory" in errs when an allocation fails. */
struct fg_fc_config *fg_fc_compile(const struct fg_fc_set *s, uint32_t server_limit, struct fg_errors *errs);
void fg_fc_config_free(struct fg_fc_config *c);

/* A request as classification sees it.  `claimed`: it came from an
 * untrusted source (common/edge/trust.h), so its user and groups were assigned
 * by trust and every other attribute is the client's claim. */
struct fg_fc_request {
	struct fg_str user, ns, verb, api_group, resource, subresource, path;
	const struct fg_str *groups;
	unsigned n_groups;
	bool claimed;
};

struct fg_fc_match {
	uint32_t schema, level;
	struct fg_str distinguisher;
	uint64_t flow_hash;                 /* 0 for levels without queues */
	uint32_t weight;                    /* the flow's weight in thousandths (FG_FC_WEIGHT_ONE: 1) */
};

/* Classify: first matching schema in (precedence, name) order, catch-all if
 * none.  The trust rule (docs/security.md §2): a claimed request (r->claimed)
 * reaches an Exempt level only through a schema that its identity alone
 * matches — some rule whose subjects match its user or groups covers every
 * verb, API group, resource, namespace and cluster scope, and some rule
 * (the same or another) every verb and non-resource URL; a schema that
 * matches it only because of what it claims (the bootstrap `probes`:
 * `get /healthz`) is passed over as if it did not match.  The schema is
 * found through the subject index: the candidates of the request's user,
 * service-account namespace and groups merged in matching order, each
 * fully matched (a request with more than FG_PROTO_MAX_GROUPS groups, which
 * the protocol cannot carry, walks every schema instead).  The weight is the level's FairSharing entry for (schema,
 * distinguisher), else the schema's entry without a distinguisher, else
 * FG_FC_WEIGHT_ONE (looked up, for any level, only when the schema has
 * entries).  Never fails on a compiled config. */
void fg_fc_classify(const struct fg_fc_config *c, const struct fg_fc_request *r, struct fg_fc_match *m);

/* Whether schema number `schema` (matching order) matches the request, on
 * its own: precedence, the index and the catch-all fallback play no part. */
bool fg_fc_schema_matches(const struct fg_fc_config *c, uint32_t schema, const struct fg_fc_request *r);

/* A request from a decoded message. */
void fg_fc_request_from_msg(const struct fg_msg *m, struct fg_fc_request *r);

int fg_fc_level_index(const struct fg_fc_config *c, const char *name);

/*
 * Where a request goes, as `fairgatectl explain -o json` prints it:
 * {"flowSchema", "priorityLevel", "distinguisher", "flowHash": "0x<16 hex>",
 *  "flowWeight": 1 | 0.5 ..., "hand": [...], "queue": N} — hand and queue only
 * for levels with queues;
 * the queue is the one it joins when the hand's queues are equally loaded
 * (the first card); under load it is the hand's least loaded queue.
 */
json_t *fg_fc_explain(const struct fg_fc_config *c, const struct fg_fc_request *r);

/* For each schema ahead of the one r matches, in matching order: why it
 * did not match — {flowSchema, priorityLevel, reason}, the reason naming the
 * first part of each rule that failed ("request has no namespace and the
 * rule lacks clusterScope"), at most FG_FC_WHY_MAX - 1 bytes.  Slow path. */
#define FG_FC_WHY_MAX 512u
json_t *fg_fc_explain_why(const struct fg_fc_config *c, const struct fg_fc_request *r);

/* A request from an "explain" JSON object: user, groups, namespace, verb,
 * apiGroup, resource, subresource, name, path (strings point into obj; groups
 * into the caller's array of `cap`).  0 or -EINVAL with a message. */
int fg_fc_request_from_json(json_t *obj, struct fg_fc_request *r, struct fg_str *groups, unsigned cap,
			    char *err, size_t errlen);
/* The same for any number of groups (matching has no group limit; beyond
 * FG_PROTO_MAX_GROUPS classification walks every schema): the groups array
 * is allocated to fit and freed by the caller. */
int fg_fc_request_from_json_alloc(json_t *obj, struct fg_fc_request *r, struct fg_str **groups, char *err,
				  size_t errlen);

/* --- what a change does (flowcontrol_diff.c) ------------------------------ */

/* Objects a diff lists at most; the rest are counted ("more"). */
#define FG_FC_DIFF_MAX_OBJECTS 512
/* Changed fields listed per object at most. */
#define FG_FC_DIFF_MAX_FIELDS 32

/*
 * What going from `before` to `after` does, as kubectl apply and diff say it:
 * {"objects": [{"kind", "name", "action", "fields"}...], "more": N,
 *  "created": N, "configured": N, "unchanged": N, "<removed>": N}.
 * Objects that differ are "created", "configured" (with "fields": one
 * "path: old -> new" line each) or `removed` ("deleted", "pruned"); objects of
 * `input` (may be NULL) that are equal in both are "unchanged".  Sorted by
 * kind (levels, then schemas, then FairSharing objects), then name.  NULL
 * when out of memory.
 */
json_t *fg_fc_set_diff(const struct fg_fc_set *before, const struct fg_fc_set *after, const struct fg_fc_set *input,
		       const char *removed);

/*
 * Which objects a document (JSON or YAML, Lists unrolled) names, for
 * `delete -f`: [{"kind", "name"}], specs not read (kubectl delete -f needs
 * only kind and name).  FairgateSettings objects are listed with an empty
 * name.  NULL with every problem in errs: an unreadable document, an object
 * without a known kind or a name, more than FG_FC_MAX_OBJECTS objects.
 */
json_t *fg_fc_document_ids(const uint8_t *buf, size_t len, struct fg_errors *errs);

/* Whether the set holds an object of this kind and name. */
bool fg_fc_set_has(const struct fg_fc_set *s, enum fg_fc_kind kind, const char *name);

/* Whether two sets hold the same objects. */
bool fg_fc_set_equal(const struct fg_fc_set *a, const struct fg_fc_set *b);

/*
 * Every level's seat limits before and after (either config may be NULL):
 * [{"name", "before": {nominal, min, max} | null, "after": ... | null,
 *   "changed": bool}], in the after config's order, then the levels only
 * before had.  A level's limit depends on every level's shares, so a change
 * to one level moves the others'.
 */
json_t *fg_fc_levels_diff(const struct fg_fc_config *before, const struct fg_fc_config *after);

#endif
