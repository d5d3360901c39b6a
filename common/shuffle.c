/* shuffle — the mixed-radix dealer; see shuffle.h. */
#include "shuffle.h"

#include <errno.h>
#include <math.h>

unsigned fg_dealer_required_bits(uint32_t deck, uint32_t hand)
{
	return (unsigned)ceil(log2((double)deck) * hand);
}

int fg_dealer_init(struct fg_dealer *d, uint32_t deck, uint32_t hand)
{
	if (deck == 0 || hand == 0 || hand > deck || deck > FG_DEALER_MAX_DECK || hand > FG_DEALER_MAX_HAND ||
	    fg_dealer_required_bits(deck, hand) > FG_DEALER_MAX_BITS)
		return -EINVAL;
	d->deck = deck;
	d->hand = hand;
	return 0;
}

void fg_dealer_deal(const struct fg_dealer *d, uint64_t hash, uint32_t *cards)
{
	uint32_t digit[FG_DEALER_MAX_HAND];
	for (uint32_t i = 0; i < d->hand; i++) {
		uint32_t base = d->deck - i;
		digit[i] = (uint32_t)(hash % base);
		hash /= base;
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
