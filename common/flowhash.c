/* flowhash — streaming xxHash64 so no buffer limits the inputs' lengths. */
#include "flowhash.h"

#define XXH_STATIC_LINKING_ONLY /* XXH64_state_t on the stack */
#include <xxhash.h>

uint64_t fg_flow_hash(const char *schema, size_t schema_len, const char *dist, size_t dist_len)
{
	XXH64_state_t st;
	static const char sep = 0;
	XXH64_reset(&st, 0);
	XXH64_update(&st, schema, schema_len);
	XXH64_update(&st, &sep, 1);
	XXH64_update(&st, dist, dist_len);
	return XXH64_digest(&st);
}
