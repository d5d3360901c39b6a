/* SPDX-License-Identifier: Apache-2.0 */
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

/* Dividing by a digit's base is a multiply and two shifts with constants
 * fixed at init (Granlund & Montgomery, "Division by invariant integers
 * using multiplication", PLDI 1994, fig. 4.1): a hand is a chain of `hand`
 * dependent divisions, and the chain's latency is what an arrival waits. */
struct fg_divisor {
	uint64_t magic;
	uint32_t d;
	uint8_t shift1, shift2;
};

struct fg_dealer {
	uint32_t deck, hand;
	struct fg_divisor base[FG_DEALER_MAX_HAND]; /* deck, deck - 1, ... */
};

/* Bits of hash a (deck, hand) pair needs: ceil(log2(deck) * hand). */
unsigned fg_dealer_required_bits(uint32_t deck, uint32_t hand);

/* 0, or -EINVAL with the Kubernetes rules: 0 < hand <= deck <= 2^26,
 * required bits <= 60 (and hand <= FG_DEALER_MAX_HAND). */
int fg_dealer_init(struct fg_dealer *d, uint32_t deck, uint32_t hand);

/*
 * Shuffle sharding's queue choice (KEP "Assignment to a Queue"): the card
 * whose queue has the least waiting work.  The first card visited rotates
 * with *rotation, which the call advances (it is the count of deals modulo
 * the hand, kept so because a divide costs tens of cycles per arrival; a
 * hand that shrank restarts it at 0), and a strict < keeps the first in that
 * order on ties, as Kubernetes' shuffleShardLocked.  work(ctx, queue) reads
 * a queue's waiting work: one worker's queue set, the board of several, the
 * simulator's — one choice for all of them.  A work of 0 ends the visit:
 * nothing can be less, and a caller may give 0 to the card it must take.
 */
static inline uint32_t fg_hand_least_loaded(const uint32_t *cards, uint32_t hand, uint32_t *rotation,
					    uint64_t (*work)(const void *ctx, uint32_t queue), const void *ctx)
{
	uint32_t offset = *rotation < hand ? *rotation : 0, best = cards[offset];
	*rotation = offset + 1 < hand ? offset + 1 : 0;
	uint64_t best_work = work(ctx, best);
	for (uint32_t i = 1; i < hand && best_work; i++) {
		uint32_t c = cards[offset + i < hand ? offset + i : offset + i - hand];
		uint64_t w = work(ctx, c);
		if (w < best_work) {
			best = c;
			best_work = w;
		}
	}
	return best;
}

/* Write the hand for hash into cards[0..hand), in deal order. */
void fg_dealer_deal(const struct fg_dealer *d, uint64_t hash, uint32_t *cards);

#endif
