/* SPDX-License-Identifier: Apache-2.0 */
/* fairshare — water-filling over Fenwick trees; see fairshare.h. */
#include "fairshare.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int init(struct fg_fairshare *f, uint32_t size, bool sums)
{
	memset(f, 0, sizeof(*f));
	if (size == 0)
		return -EINVAL;
	bool ok;
	if (sums) {
		f->count = calloc((size_t)size + 1, sizeof(*f->count));
		f->sum = calloc((size_t)size + 1, sizeof(*f->sum));
		ok = f->count && f->sum;
	} else {
		f->hist = calloc((size_t)size + 1, sizeof(*f->hist));
		ok = f->hist && fg_hbitmap_init(&f->present, size + 1) == 0;
	}
	if (!ok) {
		fg_fairshare_fini(f);
		return -ENOMEM;
	}
	f->size = size;
	f->step0 = 1;
	while (f->step0 * 2u <= size && f->step0 < (1u << 31))
		f->step0 *= 2;
	f->n = 0;
	f->total = 0;
	return 0;
}

int fg_fairshare_init(struct fg_fairshare *f, uint32_t size) { return init(f, size, true); }
int fg_fairshare_init_counts(struct fg_fairshare *f, uint32_t size) { return init(f, size, false); }

void fg_fairshare_fini(struct fg_fairshare *f)
{
	free(f->count);
	free(f->sum);
	free(f->hist);
	if (f->present.depth)
		fg_hbitmap_fini(&f->present);
	memset(f, 0, sizeof(*f)); /* size 0: not initialized (callers test it) */
}

static void add(struct fg_fairshare *f, uint64_t d, int64_t sign)
{
	if (d == 0)
		return;
	if (d > f->size)
		d = f->size;
	f->n += (uint64_t)sign;
	f->total += (uint64_t)(sign * (int64_t)d);
	if (f->hist) {
		f->hist[d] += (uint32_t)sign;
		if (sign > 0 && f->hist[d] == 1)
			fg_hbitmap_set(&f->present, (uint32_t)d);
		else if (sign < 0 && f->hist[d] == 0)
			fg_hbitmap_clear(&f->present, (uint32_t)d);
		return;
	}
	for (uint64_t i = d; i <= f->size; i += i & (~i + 1)) {
		f->count[i] += sign;
		f->sum[i] += sign * (int64_t)d;
	}
}

void fg_fairshare_update(struct fg_fairshare *f, uint64_t old_d, uint64_t new_d)
{
	if (old_d > f->size)
		old_d = f->size;
	if (new_d > f->size)
		new_d = f->size;
	if (old_d == new_d)
		return;
	add(f, old_d, -1);
	add(f, new_d, +1);
}

/* Largest demand present: the position where the prefix count reaches n. */
uint64_t fg_fairshare_max(const struct fg_fairshare *f)
{
	if (f->n == 0)
		return 0;
	if (f->hist)
		return fg_hbitmap_max(&f->present);
	uint64_t pos = 0, acc = 0;
	for (uint64_t step = f->step0; step; step >>= 1)
		if (pos + step <= f->size && acc + (uint64_t)f->count[pos + step] < f->n) {
			pos += step;
			acc += (uint64_t)f->count[pos];
		}
	return pos + 1;
}

uint64_t fg_fairshare_level(const struct fg_fairshare *f, uint64_t capacity)
{
	if (f->n == 0)
		return 0;
	if (f->total <= capacity)
		return fg_fairshare_max(f) << FG_FAIRSHARE_FRAC_BITS;
	/* S(k) = sum(d <= k) + k * #(d > k) grows with k: descend to the largest
	 * k with S(k) <= capacity. */
	uint64_t pos = 0, cnt = 0, sum = 0;
	for (uint64_t step = f->step0; step; step >>= 1) {
		uint64_t np = pos + step;
		if (np > f->size)
			continue;
		uint64_t c = cnt + (uint64_t)f->count[np], s = sum + (uint64_t)f->sum[np];
		if (s + np * (f->n - c) <= capacity) {
			pos = np;
			cnt = c;
			sum = s;
		}
	}
	uint64_t above = f->n - cnt; /* > 0, since not every demand fits */
	uint64_t spare = capacity - (sum + pos * above);
	return (pos << FG_FAIRSHARE_FRAC_BITS) + (spare << FG_FAIRSHARE_FRAC_BITS) / above;
}
