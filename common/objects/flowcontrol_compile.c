/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flowcontrol_compile — a normalized object set into an immutable
 * fg_fc_config: levels with their derived limits (docs/apf-facts.md §1.3) and
 * their FairSharing policy, schemas in matching order with their rules and
 * their flows' weights (struct cweights), the subject index over the schemas
 * (struct fg_fc_index), all in one arena.  See flowcontrol.h.
 *
 * Every allocation is checked: a failure anywhere frees what was built and
 * reports "out of memory" in errs.
 */
#include "flowcontrol_int.h"
#include "workest.h"
#include "duration.h"
#include "flowhash.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowcontrol_match.h"

/* All compiled memory comes from one arena, freed at once. */
struct arena_block {
	struct arena_block *next;
	size_t used, cap;
	max_align_t data[];
};

#define ARENA_BLOCK_BYTES 65536

struct compiled {
	struct fg_fc_config pub;
	struct arena_block *arena;
	bool oom; /* an allocation failed: the result is discarded */
};

static void *alloc(struct compiled *c, size_t size)
{
	size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	if (size == 0)
		size = sizeof(max_align_t);
	struct arena_block *b = c->arena;
	if (!b || b->used + size > b->cap) {
		size_t cap = size > ARENA_BLOCK_BYTES ? size : ARENA_BLOCK_BYTES;
		b = malloc(sizeof(*b) + cap);
		if (!b) {
			c->oom = true;
			return NULL;
		}
		b->next = c->arena;
		b->used = 0;
		b->cap = cap;
		c->arena = b;
	}
	void *p = (char *)b->data + b->used;
	b->used += size;
	memset(p, 0, size);
	return p;
}

static struct cstr dup_str(struct compiled *c, const char *s, size_t n)
{
	char *d = alloc(c, n + 1);
	if (!d)
		return (struct cstr){ "", 0 };
	memcpy(d, s, n);
	d[n] = 0;
	return (struct cstr){ d, (uint32_t)n };
}

static struct clist compile_list(struct compiled *c, json_t *arr)
{
	struct clist l = { 0 };
	size_t n = json_array_size(arr), i;
	json_t *e;
	if (n == 1 && !strcmp(json_string_value(json_array_get(arr, 0)), "*")) {
		l.any = true;
		return l;
	}
	l.v = alloc(c, sizeof(*l.v) * n);
	if (!l.v)
		return l;
	json_array_foreach(arr, i, e)
		l.v[l.n++] = dup_str(c, json_string_value(e), json_string_length(e));
	return l;
}

static void compile_subject(struct compiled *c, json_t *e, struct csubject *cs)
{
	const char *kind = json_string_value(json_object_get(e, "kind"));
	if (!strcmp(kind, "ServiceAccount")) {
		json_t *sa = json_object_get(e, "serviceAccount");
		const char *ns = json_string_value(json_object_get(sa, "namespace"));
		const char *name = json_string_value(json_object_get(sa, "name"));
		char full[600];
		cs->kind = SUBJ_SA;
		cs->any = !strcmp(name, "*");
		int n = snprintf(full, sizeof(full), "system:serviceaccount:%s:%s", ns, cs->any ? "" : name);
		cs->name = dup_str(c, full, (size_t)n < sizeof(full) ? (size_t)n : sizeof(full) - 1);
	} else {
		bool user = !strcmp(kind, "User");
		const char *name = json_string_value(json_object_get(json_object_get(e, user ? "user" : "group"), "name"));
		cs->kind = user ? SUBJ_USER : SUBJ_GROUP;
		cs->any = !strcmp(name, "*");
		cs->name = dup_str(c, name, strlen(name));
	}
}

static void compile_url(struct compiled *c, const char *us, struct curl *cu)
{
	size_t n = strlen(us);
	cu->s = dup_str(c, us, n);
	cu->any = !strcmp(us, "*");
	/* The prefix for "/x/" followed by a star, and for "/x", is "/x/". */
	size_t pn = n && us[n - 1] == '*' ? n - 1 : n;
	char *pre = alloc(c, pn + 2);
	if (!pre)
		return;
	memcpy(pre, us, pn);
	if (!pn || pre[pn - 1] != '/')
		pre[pn++] = '/';
	cu->prefix = (struct cstr){ pre, (uint32_t)pn };
}

static struct fg_fc_schema *compile_schema(struct compiled *c, json_t *spec)
{
	json_t *rules = json_object_get(spec, "rules");
	struct fg_fc_schema *s = alloc(c, sizeof(*s));
	size_t i, j;
	json_t *r, *e;
	if (!s || !(s->rules = alloc(c, sizeof(*s->rules) * json_array_size(rules))))
		return NULL;
	json_array_foreach(rules, i, r) {
		struct crule *cr = &s->rules[s->n_rules++];
		json_t *subjects = json_object_get(r, "subjects");
		json_t *rr = json_object_get(r, "resourceRules"), *nn = json_object_get(r, "nonResourceRules");
		cr->subjects = alloc(c, sizeof(*cr->subjects) * json_array_size(subjects));
		cr->res = alloc(c, sizeof(*cr->res) * json_array_size(rr));
		cr->nonres = alloc(c, sizeof(*cr->nonres) * json_array_size(nn));
		if (c->oom)
			return NULL;
		json_array_foreach(subjects, j, e)
			compile_subject(c, e, &cr->subjects[cr->n_subjects++]);
		json_array_foreach(rr, j, e) {
			struct cres *x = &cr->res[cr->n_res++];
			x->verbs = compile_list(c, json_object_get(e, "verbs"));
			x->groups = compile_list(c, json_object_get(e, "apiGroups"));
			x->resources = compile_list(c, json_object_get(e, "resources"));
			x->namespaces = compile_list(c, json_object_get(e, "namespaces"));
			x->cluster_scope = json_is_true(json_object_get(e, "clusterScope"));
		}
		json_array_foreach(nn, j, e) {
			struct cnonres *x = &cr->nonres[cr->n_nonres++];
			x->verbs = compile_list(c, json_object_get(e, "verbs"));
			json_t *urls = json_object_get(e, "nonResourceURLs"), *u;
			size_t k;
			if (!(x->urls = alloc(c, sizeof(*x->urls) * json_array_size(urls))))
				return NULL;
			json_array_foreach(urls, k, u)
				compile_url(c, json_string_value(u), &x->urls[x->n_urls++]);
		}
	}
	return c->oom ? NULL : s;
}

/* Kubernetes' rounding: half away from zero (values here are >= 0). */
static uint32_t round_half_up(double x) { return (uint32_t)floor(x + 0.5); }

/* A schema's place in matching order, read once before sorting. */
struct order {
	json_int_t precedence;
	const char *name;
	json_t *obj;
};

static int cmp_schema(const void *a, const void *b)
{
	const struct order *x = a, *y = b;
	if (x->precedence != y->precedence)
		return x->precedence < y->precedence ? -1 : 1;
	return strcmp(x->name, y->name);
}

int fg_fc_level_index(const struct fg_fc_config *c, const char *name)
{
	for (uint32_t i = 0; i < c->n_levels; i++)
		if (!strcmp(c->levels[i].name, name))
			return (int)i;
	return -1;
}

void fg_fc_config_free(struct fg_fc_config *pub)
{
	if (!pub)
		return;
	struct compiled *c = (struct compiled *)pub;
	for (struct arena_block *b = c->arena, *n; b; b = n) {
		n = b->next;
		free(b);
	}
	free(c);
}

/* A level's own fields, as the normalized (defaulted) object has them. */
static void compile_level(struct compiled *c, json_t *o, struct fg_fc_level *l)
{
	json_t *spec = fg_fc__spec(o);
	const char *name = fg_fc__name(o);
	l->name = (char *)dup_str(c, name, strlen(name)).s;
	l->exempt = !strcmp(json_string_value(json_object_get(spec, "type")), "Exempt");
	json_t *body = json_object_get(spec, l->exempt ? "exempt" : "limited");
	l->shares = (uint32_t)fg_fc__int(body, "nominalConcurrencyShares", 0);
	l->lendable_percent = (uint32_t)fg_fc__int(body, "lendablePercent", 0);
	l->borrowing_percent = (int32_t)fg_fc__int(body, "borrowingLimitPercent", -1);
	json_t *lr = json_object_get(body, "limitResponse");
	l->reject = !l->exempt && !strcmp(json_string_value(json_object_get(lr, "type")), "Reject");
	if (!l->exempt && !l->reject) {
		json_t *q = json_object_get(lr, "queuing");
		l->queues = (uint32_t)fg_fc__int(q, "queues", 0);
		l->hand_size = (uint32_t)fg_fc__int(q, "handSize", 0);
		l->queue_length_limit = (uint32_t)fg_fc__int(q, "queueLengthLimit", 0);
	}
}

/* docs/apf-facts.md §1.3: the sums run over every level, exempt included. */
static void derive_limits(struct fg_fc_config *pub, uint32_t server_limit)
{
	uint64_t share_sum = 0;
	for (uint32_t k = 0; k < pub->n_levels; k++)
		share_sum += pub->levels[k].shares;
	for (uint32_t k = 0; k < pub->n_levels; k++) {
		struct fg_fc_level *l = &pub->levels[k];
		l->nominal = share_sum ? (uint32_t)(((uint64_t)server_limit * l->shares + share_sum - 1) / share_sum) : 0;
		l->lendable = round_half_up(l->nominal * l->lendable_percent / 100.0);
		/* Borrowing beyond every seat the server has means nothing, and a
		 * large borrowingLimitPercent would overflow the maximum. */
		double borrowing = l->nominal * (double)l->borrowing_percent / 100.0;
		l->borrowing = l->borrowing_percent < 0 || borrowing >= server_limit ? server_limit
							: round_half_up(borrowing);
		l->min = l->nominal - l->lendable;
		l->max = l->nominal + l->borrowing;
		l->limit = l->nominal;
		if (l->queues) {
			uint32_t a = (uint32_t)ceil(0.15 * l->nominal), b = l->nominal / l->hand_size;
			l->max_seats = a < b ? a : b;
		} else if (l->exempt) {
			l->max_seats = FG_EXEMPT_MAX_SEATS; /* never refused: its accounting is what is capped */
		} else {
			l->max_seats = l->nominal < FG_WORK_MAX_SEATS ? l->nominal : FG_WORK_MAX_SEATS;
		}
		if (l->max_seats < 1)
			l->max_seats = 1;
	}
}

/* Schemas in matching order; those whose level does not exist dangle and
 * match nothing, as in Kubernetes (they stay in the set, with a warning). */
static void compile_schemas(struct compiled *c, json_t *schemas)
{
	struct fg_fc_config *pub = &c->pub;
	size_t n = json_array_size(schemas), i;
	json_t *o;
	struct order *sorted = calloc(n ? n : 1, sizeof(*sorted));
	pub->schemas = alloc(c, sizeof(*pub->schemas) * n);
	pub->schema_names = alloc(c, sizeof(char *) * n);
	pub->schema_level = alloc(c, sizeof(uint32_t) * n);
	pub->schema_dist = alloc(c, sizeof(*pub->schema_dist) * n);
	if (!sorted || c->oom) {
		c->oom = true;
		free(sorted);
		return;
	}
	json_array_foreach(schemas, i, o)
		sorted[i] = (struct order){ fg_fc__int(fg_fc__spec(o), "matchingPrecedence", 0), fg_fc__name(o), o };
	qsort(sorted, n, sizeof(*sorted), cmp_schema);
	for (i = 0; i < n && !c->oom; i++) {
		json_t *spec = fg_fc__spec(sorted[i].obj);
		const char *pl = json_string_value(json_object_get(json_object_get(spec, "priorityLevelConfiguration"), "name"));
		int li = fg_fc_level_index(pub, pl);
		if (li < 0)
			continue;
		uint32_t k = pub->n_schemas++;
		const char *name = sorted[i].name;
		pub->schema_names[k] = (char *)dup_str(c, name, strlen(name)).s;
		pub->schema_level[k] = (uint32_t)li;
		const char *dt = json_string_value(json_object_get(json_object_get(spec, "distinguisherMethod"), "type"));
		pub->schema_dist[k] = !dt ? FG_FC_DIST_NONE : !strcmp(dt, "ByUser") ? FG_FC_DIST_BY_USER : FG_FC_DIST_BY_NAMESPACE;
		pub->schemas[k] = compile_schema(c, spec);
		if (!strcmp(name, "catch-all"))
			pub->catch_all_schema = k;
	}
	free(sorted);
}

/* The index key of a subject (false: a wildcard, which every request has).
 * A ServiceAccount prefix whose namespace has a ':' (validation refuses it)
 * would match users that ckey_sa_prefix does not cut to it: a wildcard too. */
static bool subject_key(const struct csubject *s, uint32_t *kind, struct cstr *key)
{
	*key = s->name;
	switch (s->kind) {
	case SUBJ_USER:
		*kind = CKEY_USER;
		return !s->any;
	case SUBJ_GROUP:
		*kind = CKEY_GROUP;
		return !s->any;
	default:
		*kind = s->any ? CKEY_SA_NS : CKEY_USER;
		return !s->any || ckey_sa_prefix(s->name.s, s->name.len) == s->name.len;
	}
}

/* The slot of (kind, key) in x, taken if it was empty. */
static struct ckey *index_slot(struct fg_fc_index *x, uint32_t kind, struct cstr key)
{
	uint64_t h = ckey_hash(kind, key.s, key.len);
	for (uint32_t i = (uint32_t)h & x->mask;; i = (i + 1) & x->mask) {
		struct ckey *e = &x->slots[i];
		if (!e->key.s) {
			*e = (struct ckey){ .hash = h, .key = key, .kind = kind };
			return e;
		}
		if (e->hash == h && e->kind == kind && e->key.len == key.len && !memcmp(e->key.s, key.s, key.len))
			return e;
	}
}

/*
 * The subject index (flowcontrol_match.h) in two passes over the subjects:
 * the first counts each key's schemas, the second places them.  Schemas are
 * visited in matching order, so each list comes out increasing; `last`
 * (schema + 1 per slot) puts a schema in a list once.
 */
static void compile_index(struct compiled *c)
{
	struct fg_fc_config *pub = &c->pub;
	size_t n_subjects = 0;
	for (uint32_t k = 0; k < pub->n_schemas; k++)
		for (uint32_t i = 0; i < pub->schemas[k]->n_rules; i++)
			n_subjects += pub->schemas[k]->rules[i].n_subjects;
	if (n_subjects > UINT32_MAX / 4) {
		c->oom = true;
		return;
	}
	struct fg_fc_index *x = alloc(c, sizeof(*x));
	uint32_t slots = cweights_slots((uint32_t)n_subjects);
	uint32_t *last = calloc(slots, sizeof(*last));
	bool *always = calloc(pub->n_schemas ? pub->n_schemas : 1, sizeof(*always));
	if (!x || !last || !always || !(x->slots = alloc(c, sizeof(*x->slots) * slots)))
		goto oom;
	x->mask = slots - 1;
	size_t n_keyed = 0; /* list entries before `always` */
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t k = 0; k < pub->n_schemas; k++) {
			const struct fg_fc_schema *s = pub->schemas[k];
			for (uint32_t i = 0; i < s->n_rules; i++)
				for (uint32_t j = 0; j < s->rules[i].n_subjects; j++) {
					uint32_t kind;
					struct cstr key;
					if (!subject_key(&s->rules[i].subjects[j], &kind, &key)) {
						always[k] = true;
						continue;
					}
					struct ckey *e = index_slot(x, kind, key);
					uint32_t slot = (uint32_t)(e - x->slots);
					if (last[slot] == k + 1)
						continue;
					last[slot] = k + 1;
					if (pass)
						x->schemas[e->off + e->n] = k;
					e->n++;
				}
			if (pass && always[k])
				x->schemas[n_keyed + x->n_always++] = k;
		}
		if (pass)
			break;
		size_t n_always = 0;
		for (uint32_t i = 0; i < slots; i++) {
			x->slots[i].off = (uint32_t)n_keyed;
			n_keyed += x->slots[i].n;
			x->slots[i].n = 0;
			last[i] = 0;
		}
		for (uint32_t k = 0; k < pub->n_schemas; k++)
			n_always += always[k];
		if (!(x->schemas = alloc(c, sizeof(*x->schemas) * (n_keyed + n_always))))
			goto oom;
		x->always = x->schemas + n_keyed;
	}
	pub->index = x;
	goto out;
oom:
	c->oom = true;
out:
	free(last);
	free(always);
}

/* A duration field of a normalized FairSharing spec (there, validated in
 * (0, bound]), or dflt. */
static uint64_t duration_or(json_t *spec, const char *key, uint64_t dflt)
{
	json_t *v = json_object_get(spec, key);
	int64_t ns;
	if (!v || fg_duration_parse(json_string_value(v), json_string_length(v), &ns) || ns <= 0)
		return dflt;
	return (uint64_t)ns;
}

/* A level's FairSharing fields from its object (NULL: the defaults). */
static void compile_policy(struct fg_fc_level *l, json_t *fsh)
{
	json_t *spec = fg_fc__spec(fsh);
	const char *policy = json_string_value(json_object_get(spec, "policy"));
	l->policy = policy && !strcmp(policy, "UsageBased") ? FG_FC_POLICY_USAGE_BASED : FG_FC_POLICY_MAXMIN;
	l->usage_half_life_ns = duration_or(spec, "usageHalfLifeTime", FG_FC_DEFAULT_USAGE_HALF_LIFE_NS);
	l->usage_sampling_ns = duration_or(spec, "usageSamplingInterval", FG_FC_DEFAULT_USAGE_SAMPLING_NS);
	l->reset_inactivity_ns = duration_or(spec, "resetInactivityPeriod",
					     FG_FC_RESET_INACTIVITY_HALF_LIVES * l->usage_half_life_ns);
}

/* One flowWeights entry in effect: its schema (matching order) and flow. */
struct eff_weight {
	uint32_t schema, weight;
	const char *dist; /* NULL: the schema's default entry */
	size_t dist_len;
};

/* The entries of level li's object that name a schema of that level (the
 * others have no effect: fg_fc_set_warn_dangling says so); n grows. */
static void effective_weights(struct compiled *c, json_t *fsh, uint32_t li, json_t *schema_index,
			      struct eff_weight *out, size_t *n)
{
	size_t i;
	json_t *e;
	json_array_foreach(fg_fc__flow_weights(fsh), i, e) {
		json_t *k = json_object_get(schema_index, json_string_value(json_object_get(e, "flowSchema")));
		json_t *d = json_object_get(e, "distinguisher");
		if (!k || c->pub.schema_level[json_integer_value(k)] != li)
			continue;
		uint32_t w = fg_fc__weight_milli(json_object_get(e, "weight"));
		out[(*n)++] = (struct eff_weight){ (uint32_t)json_integer_value(k), w, json_string_value(d),
						   json_string_length(d) };
		if (w != FG_FC_WEIGHT_ONE)
			c->pub.levels[li].weighted = true;
	}
}

/* Every level's policy and every schema's flow weights. */
static void compile_fairsharing(struct compiled *c, const struct fg_fc_set *s)
{
	struct fg_fc_config *pub = &c->pub;
	json_t *objects = fg_fc__table(s, FG_FC_FAIRSHARING), *o, *index = json_object();
	size_t total = 0, n = 0;
	const char *name;
	json_object_foreach(objects, name, o)
		total += json_array_size(fg_fc__flow_weights(o));
	struct eff_weight *eff = malloc(sizeof(*eff) * (total ? total : 1));
	uint32_t *exact = calloc(pub->n_schemas ? pub->n_schemas : 1, sizeof(*exact));
	struct cweights **w = calloc(pub->n_schemas ? pub->n_schemas : 1, sizeof(*w));
	if (!index || !eff || !exact || !w)
		goto oom;
	for (uint32_t k = 0; k < pub->n_levels; k++)
		compile_policy(&pub->levels[k], NULL);
	for (uint32_t k = 0; k < pub->n_schemas; k++)
		if (json_object_set_new(index, pub->schema_names[k], json_integer(k)))
			goto oom;
	json_object_foreach(objects, name, o) {
		int li = fg_fc_level_index(pub, name);
		if (li < 0)
			continue; /* Dangling */
		compile_policy(&pub->levels[li], o);
		effective_weights(c, o, (uint32_t)li, index, eff, &n);
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t k = eff[i].schema;
		if (!w[k]) {
			if (!(w[k] = alloc(c, sizeof(*w[k]))))
				goto oom;
			w[k]->dflt = FG_FC_WEIGHT_ONE;
		}
		exact[k] += eff[i].dist != NULL;
	}
	for (uint32_t k = 0; k < pub->n_schemas; k++)
		if (exact[k]) {
			w[k]->mask = cweights_slots(exact[k]) - 1;
			if (!(w[k]->slots = alloc(c, sizeof(*w[k]->slots) * (w[k]->mask + 1))))
				goto oom;
		}
	for (size_t i = 0; i < n; i++) {
		struct cweights *cw = w[eff[i].schema];
		const char *schema = pub->schema_names[eff[i].schema];
		if (!eff[i].dist) {
			cw->dflt = eff[i].weight;
			continue;
		}
		struct cstr d = dup_str(c, eff[i].dist, eff[i].dist_len);
		cweights_put(cw, fg_flow_hash(schema, strlen(schema), d.s, d.len), d, eff[i].weight);
	}
	for (uint32_t k = 0; k < pub->n_schemas; k++)
		pub->schemas[k]->weights = w[k];
	goto out;
oom:
	c->oom = true;
out:
	json_decref(index);
	free(eff);
	free(exact);
	free(w);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The objects of one kind as an array sorted by name, sharing them with the
 * set (the compiler only reads them; fg_fc_set_get's deep copies with a
 * status would cost more than the compilation at thousands of schemas). */
static json_t *sorted_objects(const struct fg_fc_set *s, enum fg_fc_kind kind)
{
	json_t *table = fg_fc__table(s, kind), *o, *arr = json_array();
	size_t n = json_object_size(table), i = 0;
	const char **keys = calloc(n ? n : 1, sizeof(*keys)), *key;
	if (!keys || !arr)
		goto fail;
	json_object_foreach(table, key, o)
		keys[i++] = key;
	qsort(keys, n, sizeof(*keys), cmp_name);
	for (i = 0; i < n; i++)
		if (json_array_append(arr, json_object_get(table, keys[i])))
			goto fail;
	free(keys);
	return arr;
fail:
	free(keys);
	json_decref(arr);
	return NULL;
}

struct fg_fc_config *fg_fc_compile(const struct fg_fc_set *set, uint32_t server_limit, struct fg_errors *errs)
{
	struct fg_fc_set *s = fg_fc_set_share(set); /* objects are never changed in place: the tables suffice */
	struct compiled *c = calloc(1, sizeof(*c));
	json_t *levels = NULL, *schemas = NULL;
	if (!s || !c)
		goto oom;
	fg_fc_set_add_mandatory(s);
	levels = sorted_objects(s, FG_FC_PRIORITYLEVEL);
	schemas = sorted_objects(s, FG_FC_FLOWSCHEMA);
	struct fg_fc_config *pub = &c->pub;
	pub->server_limit = server_limit;
	size_t i;
	json_t *o;
	if (!levels || !schemas || !(pub->levels = alloc(c, sizeof(*pub->levels) * json_array_size(levels))))
		goto oom;
	json_array_foreach(levels, i, o)
		compile_level(c, o, &pub->levels[pub->n_levels++]);
	derive_limits(pub, server_limit);
	compile_schemas(c, schemas);
	if (!c->oom)
		compile_fairsharing(c, s);
	if (!c->oom)
		compile_index(c);
	if (c->oom || pub->n_schemas == 0 || strcmp(pub->schema_names[pub->catch_all_schema], "catch-all"))
		goto oom; /* the mandatory catch-all is always there unless memory ran out */
	json_decref(levels);
	json_decref(schemas);
	fg_fc_set_free(s);
	return pub;
oom:
	fg_errors_add(errs, "(compile)", "out of memory");
	json_decref(levels);
	json_decref(schemas);
	fg_fc_set_free(s);
	fg_fc_config_free(c ? &c->pub : NULL);
	return NULL;
}
