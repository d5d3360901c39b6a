/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seqlock — a sequence lock for a snapshot one thread writes and any thread
 * copies (status views, the cluster's shares): the writer never waits; a
 * reader retries while the sequence is odd or moved during its copy.
 *
 * Thread contract: one writer per sequence; readers any thread.
 */
#ifndef FG_SEQLOCK_H
#define FG_SEQLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Writer: the sequence odd while the snapshot is being written. */
static inline void fg_seq_write_begin(uint64_t *seq)
{
	__atomic_store_n(seq, *seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void fg_seq_write_end(uint64_t *seq)
{
	__atomic_store_n(seq, *seq + 1, __ATOMIC_RELEASE);
}

/* Reader: a consistent copy of len bytes at src (which holds *seq) into
 * dst; false if the writer kept it busy for every one of a few tries (dst
 * then holds a torn copy). */
static inline bool fg_seq_read(const uint64_t *seq, const void *src, void *dst, size_t len)
{
	for (int tries = 0; tries < 100; tries++) {
		uint64_t s1 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
		if (s1 & 1)
			continue;
		memcpy(dst, src, len);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(seq, __ATOMIC_RELAXED) == s1)
			return true;
	}
	return false;
}

#endif
