/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the wire protocol decoder, plus re-encoding whatever it
 * accepts (the re-encoded message must decode to the same fields), and the
 * cookie check on whatever cookie attribute it carries (a random cookie is
 * never valid), and the LOAD attribute fairgate puts in an answer (the
 * backend's own blanked, the answer still decodes, with fairgate's values
 * alone, whatever it carried). */
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
	if (m.hdr.type != FG_MSG_REQUEST) {
		const struct fg_answer_load ours = { 1, (uint16_t)size, 7, (uint32_t)size * 3 };
		uint8_t v[FG_PROTO_LOAD_LEN];
		fg_proto_load_value(v, &ours);
		memcpy(buf, data, size);
		/* As the worker relays it: the backend's own LOADs blanked (it
		 * decoded, so its attributes parse), then fairgate's first, where
		 * one more attribute and its bytes fit. */
		int attrs = fg_proto_blank_loads(buf, size);
		if (attrs < 0 || fg_proto_decode(buf, size, &again) != FG_PROTO_OK || again.load.present)
			abort();
		int grown = attrs < (int)FG_PROTO_MAX_ATTRS ? fg_proto_insert_load(buf, size, FG_PROTO_MAX_DATAGRAM, v) : -1;
		if (grown < 0) {
			if (attrs < (int)FG_PROTO_MAX_ATTRS && size + FG_PROTO_ATTR_HDR + FG_PROTO_LOAD_LEN <= FG_PROTO_MAX_DATAGRAM)
				abort(); /* there was room */
		} else if (fg_proto_decode(buf, (size_t)grown, &again) != FG_PROTO_OK || !again.load.present ||
			   again.load.level_permille != ours.level_permille || again.load.wait_us != ours.wait_us ||
			   again.payload_len != m.payload_len) {
			abort();
		}
	}
	free(buf);
	return 0;
}
