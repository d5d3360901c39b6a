/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flowcontrol_match — the compiled form of a FlowSchema's rules, shared by
 * the compiler (which builds it in the config's arena) and the classifier
 * (which only reads it).  Strings keep their lengths so that matching is a
 * length compare and a memcmp; a list that is exactly ["*"] is a flag.
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

struct fg_fc_schema {
	uint32_t n_rules;
	struct crule *rules;
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

#endif
