/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the wire protocol decoder, plus re-encoding whatever it
 * accepts (the re-encoded message must decode to the same fields), and the
 * cookie check on whatever cookie attribute it carries (a random cookie is
 * never valid). */
#include <stdlib.h>
#include <string.h>

#include "cookie.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fg_msg m, again;
	uint64_t id;
	fg_proto_peek_id(data, size, &id);
	if (fg_proto_decode(data, size, &m) != FG_PROTO_OK)
		return 0;
	static struct fg_cookie_jar jar;
	static int jar_ready;
	if (!jar_ready && fg_cookie_jar_init(&jar, NULL) == 0)
		jar_ready = 1;
	if (jar_ready && m.cookie.ptr &&
	    fg_cookie_valid(&jar, 0x0100007f, (const uint8_t *)m.cookie.ptr, m.cookie.len, 3600ull * 1000000000ull))
		abort(); /* forging needs the key: 2^-64 per try */
	uint8_t *buf = malloc(FG_PROTO_MAX_DATAGRAM);
	int n = fg_proto_encode(buf, FG_PROTO_MAX_DATAGRAM, &m);
	/* Unknown attributes are dropped on re-encode, so it may only shrink. */
	if (n < 0 || (size_t)n > size || fg_proto_decode(buf, (size_t)n, &again) != FG_PROTO_OK ||
	    again.n_groups != m.n_groups || again.hdr.request_id != m.hdr.request_id ||
	    again.payload_len != m.payload_len || memcmp(again.payload, m.payload, m.payload_len))
		abort();
	free(buf);
	return 0;
}
