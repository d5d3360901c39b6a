/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flowcontrol_match — the compiled form of a FlowSchema's rules, shared by
 * the compiler (which builds it in the config's arena) and the classifier
 * (which only reads it).  Strings keep their lengths so that matching is a
 * length compare and a memcmp; a list that is exactly ["*"] is a flag.  A
 * schema also carries its flows' weights (struct cweights).  The config
 * carries a subject index over its schemas (struct fg_fc_index).
 */
#ifndef FG_FLOWCONTROL_MATCH_H
#define FG_FLOWCONTROL_MATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <xxhash.h>

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

/*
 * The subject index: a schema can match a request only if a subject of one of
 * its rules matches it, and a subject that is not a wildcard matches through
 * one exact key the request has: its user name (User subjects and
 * ServiceAccount subjects' full names "system:serviceaccount:NS:NAME"), one
 * of its groups (Group subjects), or, for a service account's user name, its
 * namespace prefix "system:serviceaccount:NS:" (ServiceAccount subjects with
 * name "*").  The index maps each key to the schemas (indices in matching
 * order, increasing, each once) having a subject with it; schemas with a
 * wildcard subject (User or Group "*") are in `always`.  Classification
 * walks the union of the request's lists in increasing order, so it tests
 * in matching order every schema that could match and no other.
 *
 * Open addressing keyed by XXH3 of the key seeded with its kind; a hit
 * compares kind, length and bytes (a hash alone is never trusted).  At most
 * half the slots are taken, so a probe ends at an empty slot (key.s NULL).
 */
enum { CKEY_USER, CKEY_GROUP, CKEY_SA_NS };

#define CKEY_SA_HEAD "system:serviceaccount:"
#define CKEY_SA_HEAD_LEN (sizeof(CKEY_SA_HEAD) - 1)

struct ckey {
	uint64_t hash;
	struct cstr key; /* key.s NULL: an empty slot */
	uint32_t kind;
	uint32_t off, n; /* the schemas are index->schemas[off, off + n) */
};

struct fg_fc_index {
	uint32_t mask;           /* slots - 1 (a power of two, at least 2 slots) */
	struct ckey *slots;
	uint32_t *schemas;       /* every key's list, then `always` */
	const uint32_t *always;  /* schemas with a wildcard subject, increasing */
	uint32_t n_always;
};

static inline uint64_t ckey_hash(uint32_t kind, const char *s, size_t n)
{
	return XXH3_64bits_withSeed(s, n, kind);
}

/* The entry of (kind, key), or NULL. */
static inline const struct ckey *cindex_get(const struct fg_fc_index *x, uint32_t kind, const char *s, size_t n)
{
	uint64_t h = ckey_hash(kind, s, n);
	for (uint32_t i = (uint32_t)h & x->mask;; i = (i + 1) & x->mask) {
		const struct ckey *e = &x->slots[i];
		if (!e->key.s)
			return NULL;
		if (e->hash == h && e->kind == kind && cstr_eq(e->key, s, n))
			return e;
	}
}

/* The namespace prefix "system:serviceaccount:NS:" of a service account's
 * user name, as a length (0: the user is not one).  Namespaces are DNS
 * labels, without ':'; the compiler treats a prefix whose namespace has one
 * as a wildcard, so this is the only prefix subject that can match. */
static inline size_t ckey_sa_prefix(const char *user, size_t n)
{
	if (n <= CKEY_SA_HEAD_LEN || memcmp(user, CKEY_SA_HEAD, CKEY_SA_HEAD_LEN))
		return 0;
	const char *colon = memchr(user + CKEY_SA_HEAD_LEN, ':', n - CKEY_SA_HEAD_LEN);
	return colon ? (size_t)(colon - user) + 1 : 0;
}

#endif
