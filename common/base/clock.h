/* SPDX-License-Identifier: Apache-2.0 */
/* clock — monotonic nanoseconds for the I/O loops.  The dispatching logic
 * itself never reads a clock: time is passed in, so simulations and tests
 * drive it with a virtual clock. */
#ifndef FG_CLOCK_H
#define FG_CLOCK_H

#include <stdint.h>
#include <time.h>

#define FG_NS_PER_US 1000ull
#define FG_NS_PER_MS 1000000ull
#define FG_NS_PER_SEC 1000000000ull

static inline uint64_t fg_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * FG_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

#endif
