/*
 * shuffle — shuffle sharding's dealer (KEP-1040 "Assignment to a Queue"):
 * a hash value is read as mixed-radix digits A[i] in bases deck, deck-1, ...,
 * and card i is the A[i]-th index not dealt yet.  Same hands as Kubernetes'
 * shufflesharding.Dealer.
 *
 * Thread contract: a dealer is immutable after fg_dealer_init; share freely.
 */
#ifndef FG_SHUFFLE_H
#define FG_SHUFFLE_H

#include <stdint.h>

#define FG_DEALER_MAX_HAND 32u
#define FG_DEALER_MAX_DECK (1u << 26)
#define FG_DEALER_MAX_BITS 60u

struct fg_dealer {
	uint32_t deck, hand;
};

/* Bits of hash a (deck, hand) pair needs: ceil(log2(deck) * hand). */
unsigned fg_dealer_required_bits(uint32_t deck, uint32_t hand);

/* 0, or -EINVAL with the Kubernetes rules: 0 < hand <= deck <= 2^26,
 * required bits <= 60 (and hand <= FG_DEALER_MAX_HAND). */
int fg_dealer_init(struct fg_dealer *d, uint32_t deck, uint32_t hand);

/* Write the hand for hash into cards[0..hand), in deal order. */
void fg_dealer_deal(const struct fg_dealer *d, uint64_t hash, uint32_t *cards);

#endif
