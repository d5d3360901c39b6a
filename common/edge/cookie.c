/* SPDX-License-Identifier: Apache-2.0 */
/* cookie — keyed-hash address-validation cookies; see cookie.h. */
#include "cookie.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>

#define NS_PER_S 1000000000ull
#define KDF_CONTEXT "fgcookie" /* crypto_kdf_CONTEXTBYTES = 8 */

_Static_assert(FG_COOKIE_MASTER_LEN == crypto_kdf_KEYBYTES, "the master is a KDF key");
_Static_assert(sizeof(((struct fg_cookie_jar *)0)->secret[0]) == crypto_shorthash_KEYBYTES, "SipHash keys");
_Static_assert(FG_COOKIE_LEN == 8 + crypto_shorthash_BYTES, "header and MAC");
_Static_assert(FG_COOKIE_LIFETIME_S + 1 <= (FG_COOKIE_CACHED_EPOCHS - 1) * FG_COOKIE_EPOCH_S,
	       "the epochs an accepted cookie can name all fit the cache");

int fg_cookie_jar_init(struct fg_cookie_jar *j, const uint8_t *master)
{
	if (sodium_init() < 0)
		return -EIO;
	if (master)
		memcpy(j->master, master, sizeof(j->master));
	else
		crypto_kdf_keygen(j->master);
	for (unsigned i = 0; i < FG_COOKIE_CACHED_EPOCHS; i++)
		j->epoch[i] = UINT64_MAX;
	return 0;
}

/* The secret of an epoch.  Only epochs of acceptable cookies (and the
 * current one) are ever asked for, and they fit the cache; a new one takes
 * an empty slot, else the oldest epoch's. */
static const uint8_t *secret_of(struct fg_cookie_jar *j, uint64_t epoch)
{
	unsigned victim = 0;
	for (unsigned i = 0; i < FG_COOKIE_CACHED_EPOCHS; i++) {
		if (j->epoch[i] == epoch)
			return j->secret[i];
		if (j->epoch[victim] != UINT64_MAX && (j->epoch[i] == UINT64_MAX || j->epoch[i] < j->epoch[victim]))
			victim = i;
	}
	crypto_kdf_derive_from_key(j->secret[victim], sizeof(j->secret[victim]), epoch, KDF_CONTEXT, j->master);
	j->epoch[victim] = epoch;
	return j->secret[victim];
}

static void mac(struct fg_cookie_jar *j, const uint8_t head[8], uint32_t ts, uint32_t ip, uint8_t out[8])
{
	uint8_t in[12];
	memcpy(in, head, 8);
	memcpy(in + 8, &ip, 4);
	crypto_shorthash(out, in, sizeof(in), secret_of(j, ts / FG_COOKIE_EPOCH_S));
}

static void put_head(uint8_t head[8], uint32_t ts)
{
	head[0] = FG_COOKIE_VERSION;
	head[1] = head[2] = head[3] = 0;
	head[4] = (uint8_t)(ts >> 24);
	head[5] = (uint8_t)(ts >> 16);
	head[6] = (uint8_t)(ts >> 8);
	head[7] = (uint8_t)ts;
}

void fg_cookie_make(struct fg_cookie_jar *j, uint32_t ip, uint64_t now_ns, uint8_t out[FG_COOKIE_LEN])
{
	uint32_t ts = (uint32_t)(now_ns / NS_PER_S);
	put_head(out, ts);
	mac(j, out, ts, ip, out + 8);
}

bool fg_cookie_valid(struct fg_cookie_jar *j, uint32_t ip, const uint8_t *c, size_t len, uint64_t now_ns)
{
	if (len != FG_COOKIE_LEN || c[0] != FG_COOKIE_VERSION || c[1] || c[2] || c[3])
		return false;
	uint32_t ts = (uint32_t)c[4] << 24 | (uint32_t)c[5] << 16 | (uint32_t)c[6] << 8 | c[7];
	uint64_t now_s = now_ns / NS_PER_S;
	/* Made in the future (one second of slack between workers' clocks) or
	 * too long ago: refused before any key is derived. */
	if (ts > now_s + 1 || (ts < now_s && now_s - ts > FG_COOKIE_LIFETIME_S))
		return false;
	uint8_t expect[8];
	mac(j, c, ts, ip, expect);
	return sodium_memcmp(expect, c + 8, sizeof(expect)) == 0;
}
