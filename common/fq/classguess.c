/* SPDX-License-Identifier: Apache-2.0 */
/* classguess — work estimates that learn per request class; see classguess.h. */
#include "classguess.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const class_names[FG_VERB_CLASSES] = { "get", "list", "watch", "mutating", "other" };

const char *fg_verb_class_name(unsigned c)
{
	return c < FG_VERB_CLASSES ? class_names[c] : "?";
}

static bool is(const char *verb, size_t len, const char *word)
{
	return len == strlen(word) && !memcmp(verb, word, len);
}

enum fg_verb_class fg_verb_class_of(const char *verb, size_t len)
{
	if (!verb)
		return FG_VERB_OTHER;
	if (is(verb, len, "get"))
		return FG_VERB_GET;
	if (is(verb, len, "list"))
		return FG_VERB_LIST;
	if (is(verb, len, "watch"))
		return FG_VERB_WATCH;
	if (is(verb, len, "create") || is(verb, len, "update") || is(verb, len, "patch") || is(verb, len, "delete") ||
	    is(verb, len, "deletecollection"))
		return FG_VERB_MUTATING;
	return FG_VERB_OTHER;
}

int fg_classguess_init(struct fg_classguess *g, uint32_t n_groups, uint64_t min_ns, uint64_t max_ns)
{
	memset(g, 0, sizeof(*g));
	uint32_t n = n_groups * FG_VERB_CLASSES;
	g->e = calloc(n ? n : 1, sizeof(*g->e));
	if (!g->e)
		return -ENOMEM;
	g->n = n;
	fg_classguess_set_bounds(g, min_ns, max_ns);
	return 0;
}

void fg_classguess_fini(struct fg_classguess *g)
{
	free(g->e);
	memset(g, 0, sizeof(*g));
}

void fg_classguess_set_bounds(struct fg_classguess *g, uint64_t min_ns, uint64_t max_ns)
{
	g->min_ns = min_ns ? min_ns : 1;
	g->max_ns = max_ns < g->min_ns ? g->min_ns : max_ns;
}

uint64_t fg_classguess_get(const struct fg_classguess *g, uint32_t i, uint64_t fallback_ns)
{
	uint64_t v = i < g->n && g->e[i].samples ? g->e[i].est_ns : fallback_ns;
	return v < g->min_ns ? g->min_ns : v > g->max_ns ? g->max_ns : v;
}

void fg_classguess_learn(struct fg_classguess *g, uint32_t i, uint64_t actual_ns)
{
	if (i >= g->n)
		return;
	struct fg_classguess_entry *e = &g->e[i];
	int64_t d = (int64_t)actual_ns - (int64_t)e->est_ns;
	if (e->samples < FG_CLASSGUESS_FIRST) { /* the mean of the first ones */
		e->samples++;
		e->est_ns = (uint64_t)((int64_t)e->est_ns + d / (int64_t)e->samples);
	} else {
		e->est_ns = (uint64_t)((int64_t)e->est_ns + d / (int64_t)FG_CLASSGUESS_EWMA);
		if (e->samples < UINT32_MAX)
			e->samples++;
	}
}
