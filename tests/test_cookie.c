/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests: address-validation cookies and dispatch-id nonces. */
#include <arpa/inet.h>

#include "cookie.h"
#include "nonce.h"
#include "test.h"

#define S 1000000000ull

static const uint8_t master[FG_COOKIE_MASTER_LEN] = { 7 };

TEST(a_cookie_proves_one_address_for_its_lifetime)
{
	struct fg_cookie_jar j, other_worker, stranger;
	CHECK_EQ(fg_cookie_jar_init(&j, master), 0);
	CHECK_EQ(fg_cookie_jar_init(&other_worker, master), 0);
	CHECK_EQ(fg_cookie_jar_init(&stranger, NULL), 0); /* another process: another random master */
	uint32_t ip = inet_addr("192.0.2.10");
	uint64_t t0 = 5000 * S;
	uint8_t c[FG_COOKIE_LEN];
	fg_cookie_make(&j, ip, t0, c);
	CHECK(fg_cookie_valid(&j, ip, c, sizeof(c), t0));
	CHECK(fg_cookie_valid(&other_worker, ip, c, sizeof(c), t0 + 10 * S)); /* same master: any worker */
	CHECK(!fg_cookie_valid(&stranger, ip, c, sizeof(c), t0));
	CHECK(!fg_cookie_valid(&j, inet_addr("192.0.2.11"), c, sizeof(c), t0));
	CHECK(fg_cookie_valid(&j, ip, c, sizeof(c), t0 + FG_COOKIE_LIFETIME_S * S));      /* across an epoch */
	CHECK(!fg_cookie_valid(&j, ip, c, sizeof(c), t0 + (FG_COOKIE_LIFETIME_S + 1) * S)); /* expired */
	CHECK(!fg_cookie_valid(&j, ip, c, sizeof(c), t0 - 2 * S));                          /* made "in the future" */
	CHECK(!fg_cookie_valid(&j, ip, c, sizeof(c) - 1, t0));
	for (unsigned i = 0; i < FG_COOKIE_LEN; i++) { /* every single-bit change is refused */
		for (unsigned b = 0; b < 8; b++) {
			c[i] ^= (uint8_t)(1u << b);
			if (fg_cookie_valid(&j, ip, c, sizeof(c), t0))
				fprintf(stderr, "  byte %u bit %u flipped is still valid\n", i, b);
			CHECK(!fg_cookie_valid(&j, ip, c, sizeof(c), t0));
			c[i] ^= (uint8_t)(1u << b);
		}
	}
}

/* Cookies of every epoch that can still be accepted stay valid when checked
 * in any order (the secrets' cache holds them all). */
TEST(cookies_of_several_epochs_interleaved)
{
	struct fg_cookie_jar j;
	fg_cookie_jar_init(&j, master);
	uint32_t ip = inet_addr("198.51.100.1");
	uint64_t now = 10 * FG_COOKIE_EPOCH_S * S - 1 * S; /* just before an epoch boundary */
	uint8_t c[3][FG_COOKIE_LEN];
	uint64_t made[3] = { now - FG_COOKIE_LIFETIME_S * S, now - FG_COOKIE_EPOCH_S * S, now };
	for (int k = 0; k < 3; k++)
		fg_cookie_make(&j, ip, made[k], c[k]);
	for (int round = 0; round < 50; round++)
		for (int k = 0; k < 3; k++)
			CHECK(fg_cookie_valid(&j, ip, c[(k + round) % 3], FG_COOKIE_LEN, now));
}

TEST(nonces_are_a_keyed_stream)
{
	static const uint8_t key[FG_NONCE_KEY_LEN] = { 1 }, key2[FG_NONCE_KEY_LEN] = { 2 };
	struct fg_nonces a, b, c;
	fg_nonces_init(&a, key);
	fg_nonces_init(&b, key);
	fg_nonces_init(&c, key2);
	unsigned same_key = 0, other_key = 0, repeats = 0;
	uint32_t prev = 0;
	for (unsigned i = 0; i < 10 * FG_NONCE_BATCH; i++) { /* across refills */
		uint32_t x = fg_nonce_next(&a);
		same_key += x == fg_nonce_next(&b);
		other_key += x == fg_nonce_next(&c);
		repeats += i && x == prev;
		prev = x;
	}
	CHECK_EQ(same_key, 10 * FG_NONCE_BATCH); /* reproducible under one key */
	CHECK(other_key < 3);                     /* unrelated under another */
	CHECK(repeats < 3);
}

TEST_MAIN
