/* SPDX-License-Identifier: Apache-2.0 */
/* flowhash — the flow identifier of KEP-1040: xxHash64 of
 * (FlowSchema name, 0x00, distinguisher). */
#ifndef FG_FLOWHASH_H
#define FG_FLOWHASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t fg_flow_hash(const char *schema, size_t schema_len, const char *dist, size_t dist_len);

#endif
