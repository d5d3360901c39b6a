/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the dealer (common/fq/shuffle.c) against docs/apf-facts.md §2.3. */
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

/* The multiply-and-shift digits equal hardware division for the bases the
 * validity rules allow, on hashes that stress the carries (0, all ones,
 * powers of two and their neighbours, random). */
TEST(invariant_division_matches_hardware_division)
{
	static const uint32_t decks[] = { 1, 2, 3, 7, 64, 100, 127, 128, 129, 1000, 4095, 65537, (1u << 26) - 1, 1u << 26 };
	uint64_t hashes[200];
	unsigned nh = 0;
	hashes[nh++] = 0;
	hashes[nh++] = UINT64_MAX;
	for (unsigned b = 0; b < 64; b++) {
		hashes[nh++] = 1ull << b;
		hashes[nh++] = (1ull << b) - 1;
	}
	uint64_t x = 0x9e3779b97f4a7c15ull;
	while (nh < sizeof(hashes) / sizeof(hashes[0])) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		hashes[nh++] = x;
	}
	for (size_t k = 0; k < sizeof(decks) / sizeof(decks[0]); k++) {
		uint32_t deck = decks[k], hand = 1;
		while (hand < deck && hand < FG_DEALER_MAX_HAND && fg_dealer_required_bits(deck, hand + 1) <= FG_DEALER_MAX_BITS)
			hand++;
		struct fg_dealer d;
		CHECK_EQ(fg_dealer_init(&d, deck, hand), 0);
		for (unsigned h = 0; h < nh; h++) {
			uint32_t cards[FG_DEALER_MAX_HAND], want[FG_DEALER_MAX_HAND], digit[FG_DEALER_MAX_HAND];
			fg_dealer_deal(&d, hashes[h], cards);
			uint64_t v = hashes[h];
			for (uint32_t i = 0; i < hand; i++) { /* the reference: % and / */
				digit[i] = (uint32_t)(v % (deck - i));
				v /= deck - i;
				want[i] = digit[i];
				for (uint32_t j = i; j > 0; j--)
					if (want[i] >= digit[j - 1])
						want[i]++;
			}
			int same = !memcmp(cards, want, hand * sizeof(cards[0]));
			if (!same)
				fprintf(stderr, "  deck %u hand %u hash %#" PRIx64 ": differs\n", deck, hand, hashes[h]);
			CHECK(same);
		}
	}
}

TEST(flow_hash_deals_like_the_reference)
{
	/* docs/apf-facts.md §2.3 uses SHA-256 flow hashes; fairgate uses xxHash64, so
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
