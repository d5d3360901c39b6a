/* SPDX-License-Identifier: Apache-2.0 */
/* history — kept configuration generations; see history.h. */
#include "history.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fg_history {
	unsigned n;
	struct fg_history_entry e[FG_MAX_CONFIG_HISTORY]; /* oldest first */
};

struct fg_history *fg_history_new(void)
{
	return calloc(1, sizeof(struct fg_history));
}

static void entry_free(struct fg_history_entry *e)
{
	fg_fc_set_free(e->objects);
	free(e->settings);
	memset(e, 0, sizeof(*e));
}

void fg_history_free(struct fg_history *h)
{
	if (!h)
		return;
	for (unsigned i = 0; i < h->n; i++)
		entry_free(&h->e[i]);
	free(h);
}

/* Drop the oldest until at most `keep` remain. */
static void trim(struct fg_history *h, unsigned keep)
{
	unsigned drop = h->n > keep ? h->n - keep : 0;
	for (unsigned i = 0; i < drop; i++)
		entry_free(&h->e[i]);
	memmove(h->e, h->e + drop, (h->n - drop) * sizeof(h->e[0]));
	memset(h->e + h->n - drop, 0, drop * sizeof(h->e[0]));
	h->n -= drop;
}

int fg_history_record(struct fg_history *h, uint64_t generation, time_t when, int64_t uid, const char *summary,
		      const struct fg_fc_set *objects, const struct fg_settings *settings, unsigned keep)
{
	struct fg_history_entry e = { .generation = generation, .time = when, .uid = uid };
	snprintf(e.summary, sizeof(e.summary), "%s", summary);
	e.objects = fg_fc_set_share(objects); /* unchanged objects cost nothing per generation */
	e.settings = malloc(sizeof(*e.settings));
	if (!e.objects || !e.settings) {
		entry_free(&e);
		return -ENOMEM;
	}
	*e.settings = *settings;
	keep = keep < 1 ? 1 : keep > FG_MAX_CONFIG_HISTORY ? FG_MAX_CONFIG_HISTORY : keep;
	trim(h, keep - 1);
	h->e[h->n++] = e;
	return 0;
}

const struct fg_history_entry *fg_history_find(const struct fg_history *h, uint64_t generation)
{
	for (unsigned i = 0; i < h->n; i++)
		if (h->e[i].generation == generation)
			return &h->e[i];
	return NULL;
}

const struct fg_history_entry *fg_history_before(const struct fg_history *h, uint64_t generation)
{
	for (unsigned i = h->n; i-- > 0;)
		if (h->e[i].generation < generation)
			return &h->e[i];
	return NULL;
}

json_t *fg_history_json(const struct fg_history *h)
{
	json_t *arr = json_array();
	for (unsigned i = 0; arr && i < h->n; i++) {
		char t[32];
		struct tm tm;
		gmtime_r(&h->e[i].time, &tm);
		strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", &tm);
		json_array_append_new(arr, json_pack("{s:I, s:s, s:I, s:s}", "generation", (json_int_t)h->e[i].generation,
						     "time", t, "uid", (json_int_t)h->e[i].uid, "summary",
						     h->e[i].summary));
	}
	return arr;
}
