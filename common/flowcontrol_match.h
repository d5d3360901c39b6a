/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flowcontrol_match — the compiled form of a FlowSchema's rules, shared by
 * the compiler (which builds it in the config's arena) and the classifier
 * (which only reads it).  Strings keep their lengths so that matching is a
 * length compare and a memcmp; a list that is exactly ["*"] is a flag.  A
 * schema also carries its flows' weights (struct cweights).
 */
#ifndef FG_FLOWCONTROL_MATCH_H
#define FG_FLOWCONTROL_MATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct cstr {
	const char *s;
	uint32_t len;
};

struct clist {
	bool any; /* the list is exactly ["*"] */
	uint32_t n;
	struct cstr *v;
};

enum { SUBJ_USER, SUBJ_GROUP, SUBJ_SA };

struct csubject {
	uint8_t kind;
	bool any;          /* name "*" */
	struct cstr name;  /* user or group name; SA: full "system:serviceaccount:ns:name" or the prefix */
};

struct cres {
	struct clist verbs, groups, resources, namespaces;
	bool cluster_scope;
};

struct curl {
	struct cstr s;
	bool any;
	struct cstr prefix; /* the rule minus a trailing '*', with '/' appended if missing */
};

struct cnonres {
	struct clist verbs;
	uint32_t n_urls;
	struct curl *urls;
};

struct crule {
	uint32_t n_subjects, n_res, n_nonres;
	struct csubject *subjects;
	struct cres *res;
	struct cnonres *nonres;
};

/*
 * A schema's flow weights (the entries of its level's FairSharing object
 * that name it): the default entry's weight, and the entries with a
 * distinguisher in an open-addressing table keyed by the flow hash
 * (fg_flow_hash of schema name and distinguisher, which classification
 * computes anyway).  A slot also keeps the distinguisher's bytes and a hit
 * compares them: a client that picks a name whose hash collides with a
 * weighted one's gets the default, not the other's weight.  At most half the
 * slots are taken, so a probe ends at an empty slot.
 */
struct cweight {
	uint64_t hash;
	struct cstr dist; /* dist.s NULL: an empty slot */
	uint32_t weight;  /* thousandths */
};

struct cweights {
	uint32_t dflt;          /* the entry without a distinguisher, or FG_FC_WEIGHT_ONE */
	uint32_t mask;          /* slots - 1 (a power of two); 0: no slots */
	struct cweight *slots;  /* NULL when no entry has a distinguisher */
};

struct fg_fc_schema {
	uint32_t n_rules;
	struct crule *rules;
	const struct cweights *weights; /* NULL: every flow of the schema weighs FG_FC_WEIGHT_ONE */
};

static inline bool cstr_eq(struct cstr a, const char *s, size_t n)
{
	return a.len == n && !memcmp(a.s, s, n);
}

static inline bool clist_has(const struct clist *l, const char *s, size_t n)
{
	if (l->any)
		return true;
	for (uint32_t i = 0; i < l->n; i++)
		if (cstr_eq(l->v[i], s, n))
			return true;
	return false;
}

/* Slots for n entries: a power of two at least 2n. */
static inline uint32_t cweights_slots(uint32_t n)
{
	uint32_t s = 2;
	while (s < 2 * n)
		s <<= 1;
	return s;
}

/* Put an entry in w's slots (the caller sized them with cweights_slots and
 * puts each distinguisher once). */
static inline void cweights_put(struct cweights *w, uint64_t hash, struct cstr dist, uint32_t weight)
{
	uint32_t i = (uint32_t)hash & w->mask;
	while (w->slots[i].dist.s)
		i = (i + 1) & w->mask;
	w->slots[i] = (struct cweight){ hash, dist, weight };
}

/* The weight of the flow (hash, distinguisher): its own entry, else the
 * schema's default. */
static inline uint32_t cweights_get(const struct cweights *w, uint64_t hash, const char *d, size_t n)
{
	if (!w->slots)
		return w->dflt;
	for (uint32_t i = (uint32_t)hash & w->mask;; i = (i + 1) & w->mask) {
		const struct cweight *e = &w->slots[i];
		if (!e->dist.s)
			return w->dflt;
		if (e->hash == hash && cstr_eq(e->dist, d, n))
			return e->weight;
	}
}

#endif
