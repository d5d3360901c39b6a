/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compiler — what the hot paths say to the compiler and the CPU: branch
 * hints, the cache-line size structs shared between cores align to, and
 * single loads and stores of the plain flags threads share.
 *
 * Conventions (docs/style.md): a flag one thread writes and others poll is
 * a plain integer read with FG_READ_ONCE and written with FG_WRITE_ONCE
 * (relaxed atomics: torn-free, never cached in a register, no ordering), or
 * with __atomic acquire/release where what it guards must be seen with it.
 * `volatile` is for signal handlers' flags only (volatile sig_atomic_t).
 *
 * Thread contract: none (macros).
 */
#ifndef FG_COMPILER_H
#define FG_COMPILER_H

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define FG_CACHE_LINE 64u /* bytes; what structs shared between cores align to */
#define FG_CACHE_ALIGN(n) (((n) + FG_CACHE_LINE - 1) / FG_CACHE_LINE * FG_CACHE_LINE)

#define FG_READ_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define FG_WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

#endif
