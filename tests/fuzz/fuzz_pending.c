/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the pendingrequests query parser and the dispatch-order
 * replay (common/req/pending.h).  Input: a query string ("k=v&k"), a newline,
 * then 6-byte records of waiting requests (queue row, slot, finish, distinguisher). */
#include <stdlib.h>
#include <string.h>

#include "pending.h"

#define MAX_KV 16
#define ROWS 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t qlen = nl ? (size_t)(nl - data) : size;
	char *query = malloc(qlen + 1);
	memcpy(query, data, qlen);
	query[qlen] = 0;
	struct fg_kv kv[MAX_KV];
	size_t n = 0;
	for (char *save = NULL, *tok = strtok_r(query, "&", &save); tok && n < MAX_KV; tok = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(tok, '=');
		if (eq)
			*eq = 0;
		kv[n++] = (struct fg_kv){ tok, eq ? eq + 1 : NULL };
	}
	struct fg_pending_query q;
	char err[160];
	int rc = fg_pending_parse_query(kv, n, &q, err, sizeof(err));
	if (rc == 0 && (q.limit < 1 || q.limit > FG_PENDING_MAX_LIMIT || q.offset > FG_PENDING_MAX_OFFSET))
		abort();
	if (rc)
		for (const char *p = err; *p; p++)
			if (*p < 0x20 || *p >= 0x7f)
				abort(); /* the reason goes into an answer line as it is */
	free(query);
	if (rc || !nl)
		return 0;
	const uint8_t *rec = nl + 1;
	size_t n_rec = (size - qlen - 1) / 6;
	static const char *const dists[] = { "a", "b", "c" };
	struct fg_snapshot *s = fg_snapshot_new("pl", 0, (uint32_t)n_rec + 1, ROWS);
	if (!s)
		return 0;
	s->n_levels = 1;
	s->levels[0].r = 1000;
	s->n_queues = ROWS;
	for (uint32_t i = 0; i < ROWS; i++)
		s->queues[i] = (struct fg_snap_queue){ .index = i, .head_tie = ROWS - i };
	for (size_t i = 0; i < n_rec; i++, rec += 6) {
		struct fg_snap_req *r = &s->reqs[s->n_reqs++];
		r->state = FG_SNAP_WAITING;
		r->qrow = rec[0] % ROWS;
		r->queue = r->qrow;
		r->slot = rec[1];
		r->arrival_ns = rec[1];
		r->finish = 1000 + (uint64_t)(rec[2] << 8 | rec[3]);
		r->walk = (uint32_t)i;
		const char *d = dists[rec[4] % 3];
		r->str_off[FG_SNAP_DISTINGUISHER] = s->n_strs;
		r->str_len[FG_SNAP_DISTINGUISHER] = 1;
		s->strs[s->n_strs++] = d[0];
	}
	struct fg_pending_item *it;
	struct fg_pending_counts c;
	long k = fg_pending_order(&s, 1, &q, &it, &c);
	if (k < 0 || (uint64_t)k > q.limit || c.matched > c.waiting || c.waiting > s->n_reqs)
		abort();
	for (long i = 1; i < k; i++)
		if (it[i].pos_level <= it[i - 1].pos_level)
			abort(); /* positions are the level's, strictly increasing */
	free(it);
	fg_snapshot_free(s);
	return 0;
}
