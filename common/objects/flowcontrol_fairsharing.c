/* SPDX-License-Identifier: Apache-2.0 */
/* flowcontrol_fairsharing — FairSharing objects (fairgate.io/v1alpha1):
 * defaults, validation of the policy, durations and flow weights, weights
 * in thousandths; see flowcontrol.h ("FairSharing") and
 * docs/configuration.md. */
#include "flowcontrol_int.h"
#include "flowcontrol_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"

/* --- FairSharing (fairgate.io/v1alpha1) ----------------------------------- */

uint32_t fg_fc__weight_milli(json_t *w)
{
	double milli = json_number_value(w) * FG_FC_WEIGHT_ONE;
	if (!(milli >= 0.5)) /* NaN too */
		return 0;
	return milli >= FG_FC_WEIGHT_MAX ? FG_FC_WEIGHT_MAX : (uint32_t)llround(milli);
}

json_t *fg_fc__weight_json(uint32_t milli)
{
	if (milli % FG_FC_WEIGHT_ONE == 0)
		return json_integer(milli / FG_FC_WEIGHT_ONE);
	return json_real((double)milli / FG_FC_WEIGHT_ONE);
}

static void set_duration(json_t *spec, const char *key, int64_t ns)
{
	char buf[40];
	json_object_set_new(spec, key, json_string(fg_duration_format(ns, buf, sizeof(buf))));
}

/* A duration field: in (0, max] and at least min_ms milliseconds (0: any
 * positive), rewritten in the canonical form ("5m" and "300s" are the same
 * object); its value in ns, or 0 (absent or refused). */
static int64_t check_duration(struct fg_fc_vctx *c, json_t *spec, const char *key, uint64_t min_ms, uint64_t max)
{
	char path[FG_FC_PATH_MAX], msg[64];
	json_t *v = json_object_get(spec, key);
	int64_t ns;
	if (!v)
		return 0;
	fg_fc__child(path, "spec", key);
	if (fg_duration_parse(json_string_value(v), json_string_length(v), &ns)) {
		fg_fc__invalid(c, path, v,
			"must be a duration such as \"500ms\", \"5m\" or \"1h30m\" (units ns, us, ms, s, m, h)");
		return 0;
	}
	if (ns <= 0) {
		fg_fc__invalid(c, path, v, "must be greater than 0");
		return 0;
	}
	if ((uint64_t)ns < min_ms * 1000000ull) {
		snprintf(msg, sizeof(msg), "must be at least %llums", (unsigned long long)min_ms);
		fg_fc__invalid(c, path, v, msg);
		return 0;
	}
	if ((uint64_t)ns > max) {
		snprintf(msg, sizeof(msg), "must be at most %lluh", (unsigned long long)(max / 3600000000000ull));
		fg_fc__invalid(c, path, v, msg);
		return 0;
	}
	set_duration(spec, key, ns);
	return ns;
}

/* The defaults: MaxMin, usage half-life 5m, sampling 1s, reset after 10
 * half-lives (of the half-life given, when it is valid), weights none. */
void fg_fc__default_fairsharing(json_t *spec)
{
	if (!json_object_get(spec, "policy"))
		json_object_set_new(spec, "policy", json_string("MaxMin"));
	if (!json_object_get(spec, "usageHalfLifeTime"))
		set_duration(spec, "usageHalfLifeTime", (int64_t)FG_FC_DEFAULT_USAGE_HALF_LIFE_NS);
	if (!json_object_get(spec, "usageSamplingInterval"))
		set_duration(spec, "usageSamplingInterval", (int64_t)FG_FC_DEFAULT_USAGE_SAMPLING_NS);
	if (!json_object_get(spec, "flowWeights"))
		json_object_set_new(spec, "flowWeights", json_array());
	json_t *h = json_object_get(spec, "usageHalfLifeTime");
	int64_t ns;
	if (!json_object_get(spec, "resetInactivityPeriod") &&
	    !fg_duration_parse(json_string_value(h), json_string_length(h), &ns) && ns > 0 &&
	    (uint64_t)ns <= FG_FC_MAX_USAGE_DURATION_NS)
		set_duration(spec, "resetInactivityPeriod", ns * (int64_t)FG_FC_RESET_INACTIVITY_HALF_LIVES);
	/* One field order however they were given (get, get all -o yaml). */
	static const char *const order[] = { "policy", "usageHalfLifeTime", "usageSamplingInterval",
					     "resetInactivityPeriod", "flowWeights" };
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		json_t *v = json_incref(json_object_get(spec, order[i]));
		if (v) {
			json_object_del(spec, order[i]);
			json_object_set_new(spec, order[i], v);
		}
	}
}

/* A flowWeights entry's identity: schema, then distinguisher (absent
 * before any string: the schema's default entry). */
struct weight_key {
	const char *schema, *dist; /* dist NULL: absent */
	size_t dist_len, index;
};

static int cmp_pair(const struct weight_key *a, const struct weight_key *b)
{
	int r = strcmp(a->schema, b->schema);
	if (r)
		return r;
	if (!a->dist || !b->dist)
		return !!a->dist - !!b->dist;
	if ((r = memcmp(a->dist, b->dist, a->dist_len < b->dist_len ? a->dist_len : b->dist_len)))
		return r;
	return a->dist_len < b->dist_len ? -1 : a->dist_len > b->dist_len;
}

/* Pairs, then input order: the first of equal pairs comes first. */
static int cmp_weight_key(const void *pa, const void *pb)
{
	const struct weight_key *a = pa, *b = pb;
	int r = cmp_pair(a, b);
	return r ? r : a->index < b->index ? -1 : 1;
}

/* Entries that name a (schema, distinguisher) pair an earlier one names:
 * sorted, so that 10 000 entries cost n log n, reported in input order. */
static void check_duplicate_weights(struct fg_fc_vctx *c, json_t *fw)
{
	size_t n = json_array_size(fw), k = 0, i;
	json_t *e;
	struct weight_key *keys = calloc(n ? n : 1, sizeof(*keys));
	bool *dup = calloc(n ? n : 1, sizeof(*dup));
	if (!keys || !dup) {
		fg_errors_add(c->errs, c->where, "spec.flowWeights: out of memory");
		goto out;
	}
	json_array_foreach(fw, i, e) {
		json_t *fs = json_object_get(e, "flowSchema"), *d = json_object_get(e, "distinguisher");
		if (fs)
			keys[k++] = (struct weight_key){ json_string_value(fs), d ? json_string_value(d) : NULL,
							 json_string_length(d), i };
	}
	qsort(keys, k, sizeof(*keys), cmp_weight_key);
	for (i = 1; i < k; i++)
		if (!cmp_pair(&keys[i - 1], &keys[i]))
			dup[keys[i].index] = true;
	for (i = 0; i < n; i++)
		if (dup[i]) {
			char path[FG_FC_PATH_MAX], v[160];
			json_t *id = json_deep_copy(json_array_get(fw, i));
			json_object_del(id, "weight");
			fg_fc__field_error(c, fg_fc__index_of(path, "spec.flowWeights", i), "Duplicate value: %s",
				    fg_fc__show(id, v, sizeof(v)));
			json_decref(id);
		}
out:
	free(keys);
	free(dup);
}

static void validate_flow_weight(struct fg_fc_vctx *c, json_t *e, size_t i)
{
	char p[FG_FC_PATH_MAX], q[FG_FC_PATH_MAX], msg[96];
	json_t *fs = json_object_get(e, "flowSchema"), *d = json_object_get(e, "distinguisher");
	json_t *w = json_object_get(e, "weight");
	fg_fc__index_of(p, "spec.flowWeights", i);
	fg_fc__child(q, p, "flowSchema");
	if (!fs || !json_string_length(fs))
		fg_fc__required(c, q, "");
	else if (strlen(json_string_value(fs)) != json_string_length(fs) ||
		 !fg_fc__dns_subdomain(json_string_value(fs)))
		fg_fc__invalid_subdomain(c, q, fs, "");
	fg_fc__child(q, p, "distinguisher");
	if (d && json_string_length(d) > FG_FC_MAX_DISTINGUISHER) {
		snprintf(msg, sizeof(msg), "must be no more than %u bytes", FG_FC_MAX_DISTINGUISHER);
		fg_fc__invalid(c, q, d, msg);
	} else if (d && memchr(json_string_value(d), 0, json_string_length(d))) {
		fg_fc__invalid(c, q, d, "must not contain a NUL byte");
	}
	fg_fc__child(q, p, "weight");
	if (!w) {
		fg_fc__required(c, q, "");
	} else if (!(json_number_value(w) > 0 && json_number_value(w) <= FG_FC_WEIGHT_MAX / FG_FC_WEIGHT_ONE)) {
		fg_fc__invalid(c, q, w, "must be in (0, 1000]");
	} else if (!fg_fc__weight_milli(w)) {
		fg_fc__invalid(c, q, w, "must be in (0, 1000] and at least 0.0005 (weights are kept in thousandths)");
	} else { /* the canonical form: 4.0 and 4 are the same object */
		json_object_set_new(e, "weight", fg_fc__weight_json(fg_fc__weight_milli(w)));
	}
}

void fg_fc__validate_fairsharing_spec(struct fg_fc_vctx *c, json_t *spec)
{
	json_t *policy = json_object_get(spec, "policy");
	const char *pv = json_string_value(policy);
	if (strcmp(pv, "MaxMin") && strcmp(pv, "UsageBased"))
		fg_fc__not_supported(c, "spec.policy", policy, "\"MaxMin\", \"UsageBased\"");
	check_duration(c, spec, "usageHalfLifeTime", 0, FG_FC_MAX_USAGE_DURATION_NS);
	/* Each sampling folds every flow and scans the level's queues at each
	 * worker: not more often than every millisecond. */
	check_duration(c, spec, "usageSamplingInterval", 1, FG_FC_MAX_USAGE_DURATION_NS);
	check_duration(c, spec, "resetInactivityPeriod", 0, FG_FC_MAX_RESET_INACTIVITY_NS);
	json_t *fw = json_object_get(spec, "flowWeights"), *e;
	size_t i;
	if (json_array_size(fw) > FG_FC_MAX_FLOW_WEIGHTS) {
		fg_fc__field_error(c, "spec.flowWeights", "Too many: %zu: must have at most %u items", json_array_size(fw),
			    FG_FC_MAX_FLOW_WEIGHTS);
		return;
	}
	json_array_foreach(fw, i, e)
		validate_flow_weight(c, e, i);
	check_duplicate_weights(c, fw);
}

