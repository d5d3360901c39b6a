/* SPDX-License-Identifier: Apache-2.0 */
/* reqtable — slot table set-up; the hot operations are inline in reqtable.h. */
#include "reqtable.h"

#include <errno.h>
#include <stdlib.h>

int fg_reqtable_init(struct fg_reqtable *t, uint32_t cap)
{
	if (cap == 0 || cap > FG_MAX_MAX_REQUESTS)
		return -EINVAL;
	t->slots = calloc(cap, sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	t->cap = cap;
	t->in_use = 0;
	/* Build the free list so that slot 0 is handed out first. */
	for (uint32_t i = 0; i < cap; i++)
		t->slots[i].next = i + 1 < cap ? i + 1 : FG_REQ_NIL;
	t->free_head = 0;
	t->free_tail = cap - 1;
	return 0;
}

void fg_reqtable_fini(struct fg_reqtable *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = 0;
}
