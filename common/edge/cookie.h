/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cookie — stateless address validation (after DNS server cookies, RFC 7873
 * and RFC 9018, and QUIC's Retry): a source proves that it receives at its
 * address by echoing a cookie fairgate sent there.
 *
 * A cookie is FG_COOKIE_LEN bytes: version (1), three zero bytes, the time it
 * was made (seconds of fairgate's clock, big-endian), and SipHash-2-4 over
 * those eight bytes and the source's IPv4 address under the secret of the
 * time's epoch.  Secrets are derived from one master key per epoch of
 * FG_COOKIE_EPOCH_S (BLAKE2b KDF), so they rotate without coordination; a
 * cookie is accepted for FG_COOKIE_LIFETIME_S after it was made.  The port is
 * not covered: every socket of a host shares its cookie.  All cryptography is
 * libsodium's.
 *
 * Thread contract: a jar has one owner (a worker); jars made from the same
 * master accept each other's cookies.
 */
#ifndef FG_COOKIE_H
#define FG_COOKIE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define FG_COOKIE_LEN FG_PROTO_COOKIE_LEN
#define FG_COOKIE_VERSION 1u
#define FG_COOKIE_EPOCH_S 1800u     /* a secret is used to make cookies for 30 minutes */
#define FG_COOKIE_LIFETIME_S 3600u  /* a cookie is accepted for an hour */
#define FG_COOKIE_MASTER_LEN 32u

/* Secrets cached: every epoch an accepted cookie can name (its lifetime and
 * a second of slack span at most three), so a sender cycling timestamps
 * cannot make a worker derive a secret per datagram. */
#define FG_COOKIE_CACHED_EPOCHS 4u

struct fg_cookie_jar {
	uint8_t master[FG_COOKIE_MASTER_LEN];
	uint64_t epoch[FG_COOKIE_CACHED_EPOCHS]; /* the epochs whose secrets are cached (UINT64_MAX: none) */
	uint8_t secret[FG_COOKIE_CACHED_EPOCHS][16];
};

/* 0, or -EIO when libsodium cannot start.  master NULL: a random one. */
int fg_cookie_jar_init(struct fg_cookie_jar *j, const uint8_t *master);

/* The cookie for source ip (network byte order) at now_ns. */
void fg_cookie_make(struct fg_cookie_jar *j, uint32_t ip, uint64_t now_ns, uint8_t out[FG_COOKIE_LEN]);

/* Whether c[0..len) is a cookie this jar's master made for ip and still
 * accepts at now_ns (constant-time comparison). */
bool fg_cookie_valid(struct fg_cookie_jar *j, uint32_t ip, const uint8_t *c, size_t len, uint64_t now_ns);

#endif
