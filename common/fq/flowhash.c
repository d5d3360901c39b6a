/* SPDX-License-Identifier: Apache-2.0 */
/* flowhash — streaming xxHash64 so no buffer limits the inputs' lengths. */
#include "flowhash.h"

#include <string.h>

#define XXH_STATIC_LINKING_ONLY /* XXH64_state_t on the stack */
#include <xxhash.h>

uint64_t fg_flow_hash(const char *schema, size_t schema_len, const char *dist, size_t dist_len)
{
	/* One pass over a stack copy when it fits (the per-request case: names
	 * are at most 253 bytes, distinguishers at most 512); streaming otherwise. */
	char buf[1024];
	if (schema_len + 1 + dist_len <= sizeof(buf)) {
		memcpy(buf, schema, schema_len);
		buf[schema_len] = 0;
		if (dist_len)
			memcpy(buf + schema_len + 1, dist, dist_len);
		return XXH64(buf, schema_len + 1 + dist_len, 0);
	}
	XXH64_state_t st;
	static const char sep = 0;
	XXH64_reset(&st, 0);
	XXH64_update(&st, schema, schema_len);
	XXH64_update(&st, &sep, 1);
	XXH64_update(&st, dist, dist_len);
	return XXH64_digest(&st);
}
