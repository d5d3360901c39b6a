/* SPDX-License-Identifier: Apache-2.0 */
/* shuffle — the mixed-radix dealer; see shuffle.h. */
#include "shuffle.h"

#include <errno.h>
#include <math.h>

unsigned fg_dealer_required_bits(uint32_t deck, uint32_t hand)
{
	return (unsigned)ceil(log2((double)deck) * hand);
}

/* l = ceil(log2 d), magic = floor(2^64 (2^l - d) / d) + 1; then for every
 * 64-bit n: n / d = (t + ((n - t) >> min(l, 1))) >> max(l - 1, 0), where t
 * is the high half of magic * n. */
static struct fg_divisor divisor_of(uint32_t d)
{
	unsigned l = 0;
	while ((1ull << l) < d)
		l++;
	unsigned __int128 m = ((unsigned __int128)((1ull << l) - d) << 64) / d + 1;
	return (struct fg_divisor){ .magic = (uint64_t)m, .d = d, .shift1 = l ? 1 : 0,
				    .shift2 = (uint8_t)(l ? l - 1 : 0) };
}

static inline uint64_t divide(const struct fg_divisor *v, uint64_t n)
{
	uint64_t t = (uint64_t)(((unsigned __int128)v->magic * n) >> 64);
	return (t + ((n - t) >> v->shift1)) >> v->shift2;
}

int fg_dealer_init(struct fg_dealer *d, uint32_t deck, uint32_t hand)
{
	if (deck == 0 || hand == 0 || hand > deck || deck > FG_DEALER_MAX_DECK || hand > FG_DEALER_MAX_HAND ||
	    fg_dealer_required_bits(deck, hand) > FG_DEALER_MAX_BITS)
		return -EINVAL;
	d->deck = deck;
	d->hand = hand;
	for (uint32_t i = 0; i < hand; i++)
		d->base[i] = divisor_of(deck - i);
	return 0;
}

void fg_dealer_deal(const struct fg_dealer *d, uint64_t hash, uint32_t *cards)
{
	uint32_t digit[FG_DEALER_MAX_HAND];
	for (uint32_t i = 0; i < d->hand; i++) {
		uint64_t q = divide(&d->base[i], hash);
		digit[i] = (uint32_t)(hash - q * d->base[i].d);
		hash = q;
	}
	/* Card i is the digit[i]-th unused index: walking the earlier digits
	 * backwards, step over every earlier card at or below it. */
	for (uint32_t i = 0; i < d->hand; i++) {
		uint32_t card = digit[i];
		for (uint32_t j = i; j > 0; j--)
			if (card >= digit[j - 1])
				card++;
		cards[i] = card;
	}
}
