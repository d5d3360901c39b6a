/* Unit tests of the dealer (common/shuffle.c) against apf-facts.md §2.3. */
#include <errno.h>

#include "flowhash.h"
#include "shuffle.h"
#include "test.h"

static int deal_is(uint64_t hash, uint32_t deck, uint32_t hand, const uint32_t *want)
{
	struct fg_dealer d;
	uint32_t cards[FG_DEALER_MAX_HAND];
	if (fg_dealer_init(&d, deck, hand))
		return 0;
	fg_dealer_deal(&d, hash, cards);
	for (uint32_t i = 0; i < hand; i++)
		if (cards[i] != want[i]) {
			fprintf(stderr, "  hash %llu deck %u hand %u: card %u is %u, want %u\n",
				(unsigned long long)hash, deck, hand, i, cards[i], want[i]);
			return 0;
		}
	return 1;
}

TEST(kubernetes_vectors)
{
	CHECK(deal_is(0, 6, 6, (uint32_t[]){ 0, 1, 2, 3, 4, 5 }));
	CHECK(deal_is(1, 10, 3, (uint32_t[]){ 1, 0, 2 }));
	CHECK(deal_is(12345, 64, 6, (uint32_t[]){ 57, 3, 4, 0, 1, 2 }));
	CHECK(deal_is(1001001001, 9, 3, (uint32_t[]){ 4, 6, 0 }));
	CHECK(deal_is(400900100100ull, 8, 3, (uint32_t[]){ 4, 7, 5 }));
	CHECK(deal_is(300900200200ull, 8, 3, (uint32_t[]){ 0, 6, 1 }));
	CHECK(deal_is(0xFFFFFFFFFFFFFFFFull, 128, 6, (uint32_t[]){ 127, 1, 7, 56, 91, 6 }));
	CHECK(deal_is(10010010010010ull, 64, 7, (uint32_t[]){ 26, 34, 49, 6, 39, 27, 12 }));
}

TEST(validity_rules)
{
	struct fg_dealer d;
	CHECK_EQ(fg_dealer_required_bits(1024, 6), 60);
	CHECK_EQ(fg_dealer_required_bits(512, 8), 72);
	CHECK_EQ(fg_dealer_init(&d, 1024, 6), 0);
	CHECK_EQ(fg_dealer_init(&d, 512, 8), -EINVAL);
	CHECK_EQ(fg_dealer_init(&d, 128, 8), 0);
	CHECK_EQ(fg_dealer_init(&d, 0, 1), -EINVAL);
	CHECK_EQ(fg_dealer_init(&d, 4, 0), -EINVAL);
	CHECK_EQ(fg_dealer_init(&d, 4, 5), -EINVAL);
	CHECK_EQ(fg_dealer_init(&d, (1u << 26) + 1, 1), -EINVAL);
	CHECK_EQ(fg_dealer_init(&d, 1u << 26, 2), 0);
}

TEST(hands_are_distinct_and_in_range)
{
	struct fg_dealer d;
	fg_dealer_init(&d, 128, 8);
	uint64_t h = 88172645463325252ull;
	for (int n = 0; n < 20000; n++) {
		h ^= h << 13; h ^= h >> 7; h ^= h << 17;
		uint32_t cards[FG_DEALER_MAX_HAND];
		fg_dealer_deal(&d, h, cards);
		for (int i = 0; i < 8; i++) {
			CHECK(cards[i] < 128);
			for (int j = 0; j < i; j++)
				CHECK(cards[i] != cards[j]);
		}
	}
}

TEST(flow_hash_deals_like_the_reference)
{
	/* apf-facts.md §2.3 uses SHA-256 flow hashes; fairgate uses xxHash64, so
	 * only the dealing is shared.  Check the documented xxHash input layout. */
	uint64_t a = fg_flow_hash("global-default", 14, "alice", 5);
	uint64_t b = fg_flow_hash("global-default", 14, "alicf", 5);
	uint64_t c = fg_flow_hash("global-defaul", 13, "talice", 6); /* the 0x00 separator matters */
	CHECK(a != b && a != c);
	struct fg_dealer d;
	fg_dealer_init(&d, 128, 6);
	uint32_t cards[FG_DEALER_MAX_HAND];
	fg_dealer_deal(&d, 0xf4de3bd42ccdf6b7ull, cards);
	const uint32_t want[6] = { 55, 62, 126, 125, 105, 1 };
	for (int i = 0; i < 6; i++)
		CHECK_EQ(cards[i], want[i]);
}

TEST_MAIN
