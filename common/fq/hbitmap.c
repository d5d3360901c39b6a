/* SPDX-License-Identifier: Apache-2.0 */
/* hbitmap — the tree of bitmaps; see hbitmap.h. */
#include "hbitmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int fg_hbitmap_init(struct fg_hbitmap *b, uint32_t n)
{
	memset(b, 0, sizeof(*b));
	if (n == 0)
		return -EINVAL;
	b->n = n;
	uint64_t words = ((uint64_t)n + 63) / 64;
	for (;;) {
		uint64_t *w = calloc(words, sizeof(*w));
		if (!w) {
			fg_hbitmap_fini(b);
			return -ENOMEM;
		}
		b->level[b->depth++] = w;
		if (words == 1)
			return 0;
		words = (words + 63) / 64;
	}
}

void fg_hbitmap_fini(struct fg_hbitmap *b)
{
	for (unsigned l = 0; l < b->depth; l++)
		free(b->level[l]);
	memset(b, 0, sizeof(*b));
}
