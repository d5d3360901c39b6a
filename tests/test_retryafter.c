/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests: the adaptive Retry-After against Kubernetes' own test sequence. */
#include "retryafter.h"
#include "test.h"

/* dropped_requests_tracker_test.go: (elapsed seconds, drops) -> retryAfter. */
TEST(kubernetes_sequence)
{
	static const struct {
		uint64_t at;
		unsigned drops, want;
	} steps[] = {
		{ 0, 5, 1 }, { 1, 11, 2 }, { 2, 1, 2 }, { 3, 11, 4 }, { 4, 1, 4 }, { 7, 1, 8 },
		{ 11, 1, 8 }, { 15, 1, 7 }, { 17, 1, 6 }, { 21, 14, 5 }, { 22, 1, 10 },
	};
	const uint64_t t0 = 1700000000; /* any start */
	struct fg_retry_after t;
	fg_retry_after_init(&t, t0);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		uint32_t got = 0;
		for (unsigned d = 0; d < steps[i].drops; d++)
			got = fg_retry_after_drop(&t, t0 + steps[i].at);
		if (got != steps[i].want)
			fprintf(stderr, "  at %llu s: %u, want %u\n", (unsigned long long)steps[i].at, got, steps[i].want);
		CHECK_EQ(got, steps[i].want);
	}
}

/* A flood for minutes: capped at 32 s; the history stays bounded.  A steady
 * drop a second settles where the window's drops meet the hint (16); drops
 * far apart bring it down by one each, to 1. */
TEST(capped_and_recovering)
{
	struct fg_retry_after t;
	fg_retry_after_init(&t, 0);
	uint32_t got = 0;
	for (uint64_t s = 0; s < 600; s++)
		for (int d = 0; d < 1000; d++)
			got = fg_retry_after_drop(&t, s);
	CHECK_EQ(got, FG_RETRY_AFTER_MAX_S);
	CHECK(t.n <= FG_RETRY_AFTER_HISTORY);
	for (uint64_t s = 700; s < 800; s++)
		got = fg_retry_after_drop(&t, s);
	CHECK_EQ(got, 16);
	for (uint64_t s = 1000; s < 1000 + 40 * 40; s += 40)
		got = fg_retry_after_drop(&t, s);
	CHECK_EQ(got, 1);
}

TEST_MAIN
