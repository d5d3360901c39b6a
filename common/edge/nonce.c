/* SPDX-License-Identifier: Apache-2.0 */
/* nonce — batches of a ChaCha20 key stream; see nonce.h. */
#include "nonce.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>

_Static_assert(FG_NONCE_KEY_LEN == crypto_stream_chacha20_KEYBYTES, "one ChaCha20 key");

int fg_nonces_init(struct fg_nonces *n, const uint8_t *key)
{
	if (sodium_init() < 0)
		return -EIO;
	if (key)
		memcpy(n->key, key, sizeof(n->key));
	else
		randombytes_buf(n->key, sizeof(n->key));
	n->block = 0;
	fg_nonces__refill(n);
	return 0;
}

void fg_nonces__refill(struct fg_nonces *n)
{
	uint8_t iv[crypto_stream_chacha20_NONCEBYTES];
	_Static_assert(sizeof(iv) == sizeof(n->block), "the block counter is the stream nonce");
	memcpy(iv, &n->block, sizeof(iv));
	n->block++;
	crypto_stream_chacha20((unsigned char *)n->buf, sizeof(n->buf), iv, n->key);
	n->next = 0;
}
