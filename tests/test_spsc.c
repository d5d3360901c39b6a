/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the SPSC hand-off ring (common/base/spsc.h): order, full/empty
 * edges, index wrap-around, and a two-thread run that checks every item
 * arrives once and in order (bounded count). */
#include <pthread.h>

#include "spsc.h"
#include "test.h"

struct item {
	uint64_t seq;
	uint64_t check;
};

#define THREAD_ITEMS 2000000u

static void *producer(void *arg)
{
	struct fg_spsc *r = arg;
	for (uint64_t i = 0; i < THREAD_ITEMS;) {
		struct item it = { i, i * 0x9e3779b97f4a7c15ull };
		if (fg_spsc_push(r, &it, sizeof(it)))
			i++;
	}
	return NULL;
}

TEST(order_full_empty_and_wrap)
{
	struct fg_spsc r;
	CHECK(fg_spsc_init(&r, 3, sizeof(struct item)) == -EINVAL);
	CHECK(fg_spsc_init(&r, 0, sizeof(struct item)) == -EINVAL);
	CHECK(fg_spsc_init(&r, 8, sizeof(struct item)) == 0);

	/* Fill to capacity, one more is refused, then drain in order. */
	struct item it, out[16];
	for (uint64_t i = 0; i < 8; i++) {
		it = (struct item){ i, 0 };
		CHECK(fg_spsc_push(&r, &it, sizeof(it)));
	}
	CHECK(!fg_spsc_push(&r, &it, sizeof(it)));
	CHECK(r.full == 1);
	CHECK(fg_spsc_count(&r) == 8);
	CHECK(fg_spsc_pop(&r, out, 3, sizeof(out[0])) == 3);
	CHECK(out[0].seq == 0 && out[2].seq == 2);
	CHECK(fg_spsc_pop(&r, out, 16, sizeof(out[0])) == 5);
	CHECK(out[0].seq == 3 && out[4].seq == 7);
	CHECK(fg_spsc_pop(&r, out, 16, sizeof(out[0])) == 0);

	/* Indexes wrap past 2^32 without losing order. */
	r.head = r.tail = r.head_seen = r.tail_seen = UINT32_MAX - 3;
	for (uint64_t i = 0; i < 8; i++) {
		it = (struct item){ 100 + i, 0 };
		CHECK(fg_spsc_push(&r, &it, sizeof(it)));
	}
	CHECK(fg_spsc_pop(&r, out, 16, sizeof(out[0])) == 8);
	for (uint64_t i = 0; i < 8; i++)
		CHECK(out[i].seq == 100 + i);
	fg_spsc_fini(&r);
}

/* Two threads: every item once, in order, intact. */
TEST(two_threads_in_order)
{
	struct fg_spsc r;
	struct item out[16];
	CHECK(fg_spsc_init(&r, 1024, sizeof(struct item)) == 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, producer, &r) == 0);
	uint64_t next = 0, bad = 0;
	while (next < THREAD_ITEMS) {
		unsigned n = fg_spsc_pop(&r, out, 16, sizeof(out[0]));
		for (unsigned i = 0; i < n; i++, next++)
			bad += out[i].seq != next || out[i].check != next * 0x9e3779b97f4a7c15ull;
	}
	pthread_join(t, NULL);
	CHECK(bad == 0);
	CHECK(fg_spsc_count(&r) == 0);
	fg_spsc_fini(&r);
}

TEST_MAIN
