/* SPDX-License-Identifier: Apache-2.0 */
/* retryafter — Kubernetes' adaptive Retry-After; see retryafter.h. */
#include "retryafter.h"

#include <string.h>

void fg_retry_after_init(struct fg_retry_after *t, uint64_t now_s)
{
	memset(t, 0, sizeof(*t));
	t->retry_after_s = 1;
	t->increased_s = now_s;
}

static uint32_t slot(const struct fg_retry_after *t, uint32_t k)
{
	return (t->head + k) % FG_RETRY_AFTER_HISTORY;
}

/* Drop the seconds older than the window; sum the drops within it. */
static uint64_t drops_in_window(struct fg_retry_after *t, uint64_t now_s)
{
	while (t->n && now_s - t->hist[t->head].second > t->retry_after_s) {
		t->head = slot(t, 1);
		t->n--;
	}
	uint64_t sum = 0;
	for (uint32_t k = 0; k < t->n; k++)
		sum += t->hist[slot(t, k)].drops;
	return sum;
}

uint32_t fg_retry_after_drop(struct fg_retry_after *t, uint64_t now_s)
{
	if (t->n && t->hist[slot(t, t->n - 1)].second == now_s) {
		t->hist[slot(t, t->n - 1)].drops++; /* not the first drop of this second */
		return t->retry_after_s;
	}
	if (t->n == FG_RETRY_AFTER_HISTORY) { /* cannot happen: the window is trimmed below */
		t->head = slot(t, 1);
		t->n--;
	}
	t->hist[slot(t, t->n)].second = now_s;
	t->hist[slot(t, t->n)].drops = 1;
	t->n++;
	uint64_t drops = drops_in_window(t, now_s);
	if (now_s - t->increased_s >= t->retry_after_s && drops >= 3ull * t->retry_after_s) {
		/* As TCP backs off: doubling. */
		t->retry_after_s = t->retry_after_s * 2 > FG_RETRY_AFTER_MAX_S ? FG_RETRY_AFTER_MAX_S
										: t->retry_after_s * 2;
		t->increased_s = now_s;
	} else if (drops < t->retry_after_s && t->retry_after_s > 1) {
		t->retry_after_s--; /* and recovering linearly */
	}
	return t->retry_after_s;
}
