/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the wire protocol codec (common/wire/proto.c). */
#include <errno.h>
#include <stdlib.h>

#include "client.h"
#include "proto.h"
#include "test.h"

static int encode_full(uint8_t *buf, size_t cap)
{
	struct fg_msg m;
	fg_msg_init(&m, FG_MSG_REQUEST, 0x0102030405060708ull);
	m.hdr.flags = 0;
	m.hdr.seats = 3;
	m.hdr.final_seats = 2;
	m.hdr.work_hint = 5000;
	m.hdr.extra_latency_us = 250000;
	m.hdr.deadline_ms = 60000;
	m.user = fg_str_of("system:serviceaccount:kube-system:job");
	m.ns = fg_str_of("kube-system");
	m.verb = fg_str_of("list");
	m.api_group = fg_str_of("");
	m.resource = fg_str_of("pods");
	m.subresource = fg_str_of("status");
	m.name = fg_str_of("p1");
	fg_msg_add_group(&m, "system:serviceaccounts");
	fg_msg_add_group(&m, "system:authenticated");
	m.payload = (const uint8_t *)"hello";
	m.payload_len = 5;
	return fg_proto_encode(buf, cap, &m);
}

static int str_is(struct fg_str s, const char *want)
{
	return s.ptr && s.len == strlen(want) && !memcmp(s.ptr, want, s.len);
}

TEST(roundtrip_all_fields)
{
	uint8_t buf[1024];
	int n = encode_full(buf, sizeof(buf));
	CHECK(n > (int)FG_PROTO_HDR_LEN);
	struct fg_msg d;
	CHECK_EQ(fg_proto_decode(buf, (size_t)n, &d), FG_PROTO_OK);
	CHECK_EQ(d.hdr.type, FG_MSG_REQUEST);
	CHECK(d.hdr.request_id == 0x0102030405060708ull);
	CHECK_EQ(d.hdr.seats, 3);
	CHECK_EQ(d.hdr.final_seats, 2);
	CHECK_EQ(d.hdr.work_hint, 5000);
	CHECK_EQ(d.hdr.extra_latency_us, 250000);
	CHECK_EQ(d.hdr.deadline_ms, 60000);
	CHECK(str_is(d.user, "system:serviceaccount:kube-system:job"));
	CHECK(str_is(d.ns, "kube-system"));
	CHECK(str_is(d.verb, "list"));
	CHECK(d.api_group.ptr && d.api_group.len == 0); /* core group: present, empty */
	CHECK(str_is(d.resource, "pods"));
	CHECK(str_is(d.subresource, "status"));
	CHECK(str_is(d.name, "p1"));
	CHECK(d.path.ptr == NULL);
	CHECK_EQ(d.n_groups, 2);
	CHECK(str_is(d.groups[1], "system:authenticated"));
	CHECK_EQ(d.payload_len, 5);
	CHECK(!memcmp(d.payload, "hello", 5));
	CHECK_EQ(d.hdr.hdr_len, (size_t)n - 5);
}

TEST(minimal_request_and_empty_payload)
{
	uint8_t buf[64];
	struct fg_msg m, d;
	fg_msg_init(&m, FG_MSG_RESPONSE, 7);
	int n = fg_proto_encode(buf, sizeof(buf), &m);
	CHECK_EQ(n, FG_PROTO_HDR_LEN);
	CHECK_EQ(fg_proto_decode(buf, (size_t)n, &d), FG_PROTO_OK);
	CHECK_EQ(d.payload_len, 0);
	CHECK_EQ(d.n_groups, 0);
	CHECK(d.user.ptr == NULL);
}

TEST(reject_roundtrip_and_reasons)
{
	uint8_t buf[64];
	for (int r = 1; r < FG_REJECT__COUNT; r++) {
		int n = fg_proto_encode_reject(buf, sizeof(buf), 99, (enum fg_reject_reason)r, 1500);
		CHECK_EQ(n, FG_PROTO_HDR_LEN);
		struct fg_msg d;
		CHECK_EQ(fg_proto_decode(buf, (size_t)n, &d), FG_PROTO_OK);
		CHECK_EQ(d.hdr.type, FG_MSG_REJECT);
		CHECK_EQ(d.hdr.reason, r);
		CHECK_EQ(d.hdr.retry_after_ms, 1500);
		CHECK_EQ(fg_reject_reason_parse(fg_reject_reason_name(r)), r);
	}
	CHECK_EQ(fg_reject_reason_parse("no-such-reason"), FG_REJECT_NONE);
	CHECK_STR(fg_reject_reason_name(FG_REJECT_QUEUE_FULL), "queue-full");
	CHECK_STR(fg_reject_reason_name(FG_REJECT_BACKEND_TIMEOUT), "backend-timeout");
	CHECK_EQ(fg_proto_encode_reject(buf, 39, 1, FG_REJECT_INVALID, 0), -ENOSPC);
}

TEST(reject_with_bad_reason_is_invalid)
{
	uint8_t buf[64];
	fg_proto_encode_reject(buf, sizeof(buf), 1, FG_REJECT_INVALID, 0);
	struct fg_msg d;
	buf[32] = 0; buf[33] = 0; /* reason none */
	CHECK_EQ(fg_proto_decode(buf, 40, &d), FG_PROTO_EREASON);
	buf[33] = FG_REJECT__COUNT;
	CHECK_EQ(fg_proto_decode(buf, 40, &d), FG_PROTO_EREASON);
}

TEST(header_errors)
{
	uint8_t buf[1024];
	int n = encode_full(buf, sizeof(buf));
	struct fg_msg d;
	CHECK_EQ(fg_proto_decode(buf, 0, &d), FG_PROTO_ETOO_SHORT);
	CHECK_EQ(fg_proto_decode(buf, FG_PROTO_HDR_LEN - 1, &d), FG_PROTO_ETOO_SHORT);
	uint8_t big[FG_PROTO_MAX_DATAGRAM + 1];
	memcpy(big, buf, (size_t)n);
	CHECK_EQ(fg_proto_decode(big, sizeof(big), &d), FG_PROTO_ETOO_LONG);

	uint8_t t[1024];
	memcpy(t, buf, (size_t)n); t[0] ^= 0xff;
	CHECK_EQ(fg_proto_decode(t, (size_t)n, &d), FG_PROTO_EMAGIC);
	memcpy(t, buf, (size_t)n); t[2] = 2;
	CHECK_EQ(fg_proto_decode(t, (size_t)n, &d), FG_PROTO_EVERSION);
	memcpy(t, buf, (size_t)n); t[3] = 0;
	CHECK_EQ(fg_proto_decode(t, (size_t)n, &d), FG_PROTO_ETYPE);
	memcpy(t, buf, (size_t)n); t[3] = 4;
	CHECK_EQ(fg_proto_decode(t, (size_t)n, &d), FG_PROTO_ETYPE);
	memcpy(t, buf, (size_t)n); t[6] = 0; t[7] = 39; /* header length below the fixed header */
	CHECK_EQ(fg_proto_decode(t, (size_t)n, &d), FG_PROTO_EHDR_LEN);
	memcpy(t, buf, (size_t)n); t[6] = 0xff; t[7] = 0xff; /* lying: past the datagram */
	CHECK_EQ(fg_proto_decode(t, (size_t)n, &d), FG_PROTO_EHDR_LEN);
}

/* Build a datagram with hand-written attributes. */
static size_t with_attrs(uint8_t *buf, const uint8_t *attrs, size_t alen)
{
	fg_proto_encode_reject(buf, 64, 5, FG_REJECT_INVALID, 0);
	buf[3] = FG_MSG_REQUEST;
	buf[32] = buf[33] = 0;
	memcpy(buf + FG_PROTO_HDR_LEN, attrs, alen);
	size_t hl = FG_PROTO_HDR_LEN + alen;
	buf[6] = (uint8_t)(hl >> 8);
	buf[7] = (uint8_t)hl;
	return hl;
}

TEST(attribute_errors)
{
	uint8_t buf[4096];
	struct fg_msg d;
	/* Attribute header cut short. */
	const uint8_t trunc_hdr[] = { 0, 1, 0 };
	CHECK_EQ(fg_proto_decode(buf, with_attrs(buf, trunc_hdr, sizeof(trunc_hdr)), &d), FG_PROTO_EATTR_TRUNC);
	/* Length field lies past the header. */
	const uint8_t lying[] = { 0, 1, 0, 10, 'a', 'b' };
	CHECK_EQ(fg_proto_decode(buf, with_attrs(buf, lying, sizeof(lying)), &d), FG_PROTO_EATTR_TRUNC);
	/* Empty user. */
	const uint8_t empty[] = { 0, 1, 0, 0 };
	CHECK_EQ(fg_proto_decode(buf, with_attrs(buf, empty, sizeof(empty)), &d), FG_PROTO_EEMPTY);
	/* Empty apiGroup is the core group and fine. */
	const uint8_t core[] = { 0, 5, 0, 0 };
	CHECK_EQ(fg_proto_decode(buf, with_attrs(buf, core, sizeof(core)), &d), FG_PROTO_OK);
	/* NUL inside a value. */
	const uint8_t nul[] = { 0, 1, 0, 3, 'a', 0, 'b' };
	CHECK_EQ(fg_proto_decode(buf, with_attrs(buf, nul, sizeof(nul)), &d), FG_PROTO_ENUL);
	/* Repeated single-valued attribute. */
	const uint8_t dup[] = { 0, 1, 0, 1, 'a', 0, 1, 0, 1, 'b' };
	CHECK_EQ(fg_proto_decode(buf, with_attrs(buf, dup, sizeof(dup)), &d), FG_PROTO_EATTR_DUP);
	/* Unknown types are skipped and counted. */
	const uint8_t unknown[] = { 0x7f, 0x00, 0, 2, 'x', 'y', 0, 1, 0, 1, 'u' };
	CHECK_EQ(fg_proto_decode(buf, with_attrs(buf, unknown, sizeof(unknown)), &d), FG_PROTO_OK);
	CHECK_EQ(d.n_unknown_attrs, 1);
	CHECK(str_is(d.user, "u"));
	/* Value longer than FG_PROTO_MAX_STR. */
	uint8_t longv[4 + FG_PROTO_MAX_STR + 1] = { 0, 1, (FG_PROTO_MAX_STR + 1) >> 8, (FG_PROTO_MAX_STR + 1) & 0xff };
	memset(longv + 4, 'a', FG_PROTO_MAX_STR + 1);
	CHECK_EQ(fg_proto_decode(buf, with_attrs(buf, longv, sizeof(longv)), &d), FG_PROTO_EATTR_LEN);
	/* Exactly FG_PROTO_MAX_STR is fine. */
	longv[2] = FG_PROTO_MAX_STR >> 8; longv[3] = FG_PROTO_MAX_STR & 0xff;
	CHECK_EQ(fg_proto_decode(buf, with_attrs(buf, longv, sizeof(longv) - 1), &d), FG_PROTO_OK);
}

/* The two-step decode: the header alone takes what the attribute check
 * refuses (a relay reads answers' headers only); both steps together are
 * fg_proto_decode. */
TEST(header_then_attributes)
{
	uint8_t buf[4096];
	struct fg_msg d;
	const uint8_t nul[] = { 0, 1, 0, 3, 'a', 0, 'b' };
	size_t len = with_attrs(buf, nul, sizeof(nul));
	memset(&d, 0xa5, sizeof(d)); /* the header step leaves the attribute fields as they are */
	CHECK_EQ(fg_proto_decode_header(buf, len, &d), FG_PROTO_OK);
	CHECK_EQ(d.hdr.hdr_len, FG_PROTO_HDR_LEN + sizeof(nul));
	CHECK(d.payload == buf + d.hdr.hdr_len);
	CHECK_EQ(fg_proto_decode_attrs(buf, &d), FG_PROTO_ENUL);
	/* The attribute step resets them first: an attribute the message does
	 * not have is absent, whatever the msg held before. */
	const uint8_t ns_only[] = { 0, FG_ATTR_NAMESPACE, 0, 2, 'n', 's' };
	len = with_attrs(buf, ns_only, sizeof(ns_only));
	memset(&d, 0xa5, sizeof(d));
	CHECK_EQ(fg_proto_decode_header(buf, len, &d), FG_PROTO_OK);
	CHECK_EQ(fg_proto_decode_attrs(buf, &d), FG_PROTO_OK);
	CHECK(str_is(d.ns, "ns") && !d.user.ptr && !d.verb.ptr && !d.cookie.ptr && d.n_groups == 0 && d.n_unknown_attrs == 0);
	int n = encode_full(buf, sizeof(buf));
	CHECK(n > 0);
	CHECK_EQ(fg_proto_decode_header(buf, (size_t)n, &d), FG_PROTO_OK);
	CHECK_EQ(fg_proto_decode_attrs(buf, &d), FG_PROTO_OK);
	CHECK(str_is(d.user, "system:serviceaccount:kube-system:job"));
	CHECK_EQ(d.n_groups, 2);
	CHECK_EQ(d.payload_len, 5);
	/* Header errors come from the first step. */
	buf[0] ^= 0xff;
	CHECK_EQ(fg_proto_decode_header(buf, (size_t)n, &d), FG_PROTO_EMAGIC);
	CHECK_EQ(fg_proto_decode_header(buf, FG_PROTO_HDR_LEN - 1, &d), FG_PROTO_ETOO_SHORT);
}

TEST(group_and_attribute_count_limits)
{
	uint8_t attrs[4096], buf[8192];
	struct fg_msg d;
	size_t n = 0;
	for (unsigned i = 0; i < FG_PROTO_MAX_GROUPS; i++) {
		attrs[n++] = 0; attrs[n++] = FG_ATTR_GROUP; attrs[n++] = 0; attrs[n++] = 1; attrs[n++] = 'g';
	}
	CHECK_EQ(fg_proto_decode(buf, with_attrs(buf, attrs, n), &d), FG_PROTO_OK);
	CHECK_EQ(d.n_groups, FG_PROTO_MAX_GROUPS);
	attrs[n++] = 0; attrs[n++] = FG_ATTR_GROUP; attrs[n++] = 0; attrs[n++] = 1; attrs[n++] = 'g';
	CHECK_EQ(fg_proto_decode(buf, with_attrs(buf, attrs, n), &d), FG_PROTO_ETOO_MANY);
	/* Many unknown attributes: bounded by FG_PROTO_MAX_ATTRS. */
	n = 0;
	for (unsigned i = 0; i <= FG_PROTO_MAX_ATTRS; i++) {
		attrs[n++] = 0x10; attrs[n++] = 0; attrs[n++] = 0; attrs[n++] = 0;
	}
	CHECK_EQ(fg_proto_decode(buf, with_attrs(buf, attrs, n), &d), FG_PROTO_ETOO_MANY);
}

TEST(encode_errors)
{
	uint8_t buf[1024];
	struct fg_msg m;
	fg_msg_init(&m, FG_MSG_REQUEST, 1);
	CHECK_EQ(fg_proto_encode(buf, 10, &m), -ENOSPC);
	m.user = fg_str_of("abcdefgh");
	CHECK_EQ(fg_proto_encode(buf, 45, &m), -ENOSPC);
	char longs[FG_PROTO_MAX_STR + 2];
	memset(longs, 'x', sizeof(longs) - 1);
	longs[sizeof(longs) - 1] = 0;
	m.user = fg_str_of(longs);
	CHECK_EQ(fg_proto_encode(buf, sizeof(buf), &m), -EINVAL);
	m.user = fg_str_of("u");
	m.hdr.type = 9;
	CHECK_EQ(fg_proto_encode(buf, sizeof(buf), &m), -EINVAL);
	m.hdr.type = FG_MSG_REQUEST;
	m.payload = (const uint8_t *)"0123456789";
	m.payload_len = 10;
	CHECK_EQ(fg_proto_encode(buf, FG_PROTO_HDR_LEN + 5 + 5, &m), -ENOSPC);
	CHECK(fg_msg_add_group(&m, "a") == 0);
	m.n_groups = FG_PROTO_MAX_GROUPS;
	CHECK_EQ(fg_msg_add_group(&m, "b"), -ENOSPC);
}

TEST(peek_and_rewrite_id)
{
	uint8_t buf[1024];
	int n = encode_full(buf, sizeof(buf));
	uint64_t id = 0;
	CHECK_EQ(fg_proto_peek_id(buf, (size_t)n, &id), 0);
	CHECK(id == 0x0102030405060708ull);
	CHECK_EQ(fg_proto_peek_id(buf, 15, &id), -EINVAL);
	fg_proto_set_request_id(buf, 0xdeadbeefcafef00dull);
	CHECK(fg_proto_get_request_id(buf) == 0xdeadbeefcafef00dull);
	struct fg_msg d;
	CHECK_EQ(fg_proto_decode(buf, (size_t)n, &d), FG_PROTO_OK);
	CHECK(d.hdr.request_id == 0xdeadbeefcafef00dull);
	buf[0] = 0;
	CHECK_EQ(fg_proto_peek_id(buf, (size_t)n, &id), -EINVAL);
}

/* answerLoad (protocol.md): fairgate puts its LOAD attribute first in an
 * answer, the backend's attributes and payload after it unchanged; a client
 * decodes the first one (a backend's own later one is ignored); in a
 * request the type is unknown and skipped; a wrong length is refused; no
 * room leaves the message as it was. */
TEST(load_attribute_on_answers)
{
	uint8_t buf[256], before[256];
	struct fg_msg m, d;
	fg_msg_init(&m, FG_MSG_RESPONSE, 77);
	m.user = fg_str_of("backend-said");
	m.payload = (const uint8_t *)"body";
	m.payload_len = 4;
	int n = fg_proto_encode(buf, sizeof(buf), &m);
	CHECK(n > 0);
	memcpy(before, buf, (size_t)n);
	const struct fg_answer_load ours = { 1, 1250, 65535, 4000000 };
	uint8_t v[FG_PROTO_LOAD_LEN];
	fg_proto_load_value(v, &ours);
	CHECK_EQ(fg_proto_insert_load(buf, (size_t)n, (size_t)n + 11, v), -ENOSPC); /* one byte short */
	CHECK(!memcmp(buf, before, (size_t)n));
	int n2 = fg_proto_insert_load(buf, (size_t)n, sizeof(buf), v);
	CHECK_EQ(n2, n + (int)(FG_PROTO_ATTR_HDR + FG_PROTO_LOAD_LEN));
	CHECK_EQ(fg_proto_decode(buf, (size_t)n2, &d), FG_PROTO_OK);
	CHECK(d.load.present && d.load.level_permille == 1250 && d.load.instance_permille == 65535 &&
	      d.load.wait_us == 4000000);
	CHECK(str_is(d.user, "backend-said"));
	CHECK(d.payload_len == 4 && !memcmp(d.payload, "body", 4));
	CHECK(d.hdr.request_id == 77);
	/* A second insert (a backend's own, or ours again) after ours: the first wins. */
	const struct fg_answer_load other = { 1, 1, 2, 3 };
	uint8_t v2[FG_PROTO_LOAD_LEN];
	fg_proto_load_value(v2, &other);
	int n3 = fg_proto_insert_load(buf, (size_t)n2, sizeof(buf), v2);
	CHECK_EQ(fg_proto_decode(buf, (size_t)n3, &d), FG_PROTO_OK);
	CHECK(d.load.level_permille == 1 && d.load.wait_us == 3);
	/* Encode carries it; re-decoding gives the same. */
	m.load = ours;
	n = fg_proto_encode(buf, sizeof(buf), &m);
	CHECK_EQ(fg_proto_decode(buf, (size_t)n, &d), FG_PROTO_OK);
	CHECK(d.load.present && d.load.level_permille == 1250 && d.load.wait_us == 4000000);
	/* Another length in an answer: unknown, skipped (forward compatibility). */
	const uint8_t short_load[] = { 0, FG_ATTR_LOAD, 0, 4, 1, 2, 3, 4 };
	size_t hl = with_attrs(buf, short_load, sizeof(short_load));
	buf[3] = FG_MSG_RESPONSE;
	CHECK_EQ(fg_proto_decode(buf, hl, &d), FG_PROTO_OK);
	CHECK(!d.load.present && d.n_unknown_attrs == 1);
	/* In a request: unknown, skipped, whatever its length. */
	buf[3] = FG_MSG_REQUEST;
	CHECK_EQ(fg_proto_decode(buf, hl, &d), FG_PROTO_OK);
	CHECK(!d.load.present && d.n_unknown_attrs == 1);
}

/* A backend's own LOAD attributes are blanked to PADDING in place (the
 * length kept, the count returned); an attribute area that does not parse
 * is left alone. */
TEST(backend_loads_blanked)
{
	uint8_t buf[256];
	struct fg_msg m, d;
	fg_msg_init(&m, FG_MSG_RESPONSE, 9);
	m.user = fg_str_of("u");
	m.load = (struct fg_answer_load){ 1, 777, 888, 999 }; /* the backend's claim */
	int n = fg_proto_encode(buf, sizeof(buf), &m);
	CHECK_EQ(fg_proto_decode(buf, (size_t)n, &d), FG_PROTO_OK);
	CHECK(d.load.present && d.load.level_permille == 777);
	CHECK_EQ(fg_proto_blank_loads(buf, (size_t)n), 2);
	CHECK_EQ(fg_proto_decode(buf, (size_t)n, &d), FG_PROTO_OK);
	CHECK(!d.load.present && d.n_unknown_attrs == 1 && str_is(d.user, "u"));
	buf[7] = (uint8_t)(buf[7] + 1); /* header length one past the attributes: the last one truncated */
	CHECK_EQ(fg_proto_blank_loads(buf, (size_t)n), -EINVAL);
	buf[6] = 0xff; /* header length past the datagram */
	CHECK_EQ(fg_proto_blank_loads(buf, (size_t)n), -EINVAL);
}

TEST(error_names_are_distinct)
{
	for (int a = 0; a < FG_PROTO_ERR__COUNT; a++)
		for (int b = a + 1; b < FG_PROTO_ERR__COUNT; b++)
			CHECK(strcmp(fg_proto_strerror(a), fg_proto_strerror(b)));
	CHECK_STR(fg_proto_strerror(FG_PROTO_ERR__COUNT), "unknown error");
}

/* Random and mutated inputs: never crash, and an accepted message stays
 * inside its buffer.  ASan/UBSan builds run the same loop. */
TEST(random_and_mutated_inputs)
{
	uint8_t good[1024], buf[2048];
	int n = encode_full(good, sizeof(good));
	unsigned seed = 12345;
	unsigned ok = 0;
	for (int iter = 0; iter < 200000; iter++) {
		size_t len;
		if (iter & 1) {
			len = (size_t)(rand_r(&seed) % sizeof(buf));
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)rand_r(&seed);
			buf[0] = 0x46; buf[1] = 0x47; buf[2] = 1; /* get past the magic often */
		} else {
			memcpy(buf, good, (size_t)n);
			len = (size_t)n;
			for (int k = rand_r(&seed) % 4; k >= 0; k--)
				buf[rand_r(&seed) % n] = (uint8_t)rand_r(&seed);
			len = (size_t)(rand_r(&seed) % (n + 1));
		}
		struct fg_msg d;
		if (fg_proto_decode(buf, len, &d) == FG_PROTO_OK) {
			ok++;
			CHECK(d.payload >= buf && d.payload + d.payload_len == buf + len);
			CHECK(d.hdr.hdr_len >= FG_PROTO_HDR_LEN && d.hdr.hdr_len <= len);
		}
	}
	CHECK(ok > 0);
}

TEST_MAIN
