/* SPDX-License-Identifier: Apache-2.0 */
/* proto — wire protocol v1 codec; see proto.h and docs/protocol.md. */
#include "proto.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) << 32 | rd32(p + 4); }
static inline void wr16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = (uint8_t)v; }
static inline void wr32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24; p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline void wr64(uint8_t *p, uint64_t v) { wr32(p, (uint32_t)(v >> 32)); wr32(p + 4, (uint32_t)v); }

/* Header layout (offsets); docs/protocol.md has the same table. */
enum {
	OFF_MAGIC = 0, OFF_VERSION = 2, OFF_TYPE = 3, OFF_FLAGS = 4, OFF_HDR_LEN = 6,
	OFF_ID = 8, OFF_SEATS = 16, OFF_FINAL_SEATS = 18, OFF_WORK = 20,
	OFF_EXTRA_LAT = 24, OFF_DEADLINE = 28, OFF_REASON = 32, OFF_RESERVED = 34,
	OFF_RETRY = 36,
};

/* Attribute values are short: a plain loop beats a library call here. */
static inline bool has_nul(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!p[i])
			return true;
	return false;
}

static struct fg_str *single_attr(struct fg_msg *m, uint16_t type)
{
	switch (type) {
	case FG_ATTR_USER: return &m->user;
	case FG_ATTR_NAMESPACE: return &m->ns;
	case FG_ATTR_VERB: return &m->verb;
	case FG_ATTR_API_GROUP: return &m->api_group;
	case FG_ATTR_RESOURCE: return &m->resource;
	case FG_ATTR_SUBRESOURCE: return &m->subresource;
	case FG_ATTR_NAME: return &m->name;
	case FG_ATTR_PATH: return &m->path;
	case FG_ATTR_COOKIE: return &m->cookie;
	default: return NULL;
	}
}

/* apiGroup "" is the core group, so that one attribute may be empty. */
static int empty_allowed(uint16_t type) { return type == FG_ATTR_API_GROUP; }

static enum fg_proto_err decode_attrs(const uint8_t *p, size_t n, struct fg_msg *m)
{
	unsigned count = 0;
	while (n > 0) {
		if (n < FG_PROTO_ATTR_HDR)
			return FG_PROTO_EATTR_TRUNC;
		uint16_t type = rd16(p), alen = rd16(p + 2);
		p += FG_PROTO_ATTR_HDR;
		n -= FG_PROTO_ATTR_HDR;
		if (alen > n)
			return FG_PROTO_EATTR_TRUNC;
		if (++count > FG_PROTO_MAX_ATTRS)
			return FG_PROTO_ETOO_MANY;
		if (type == FG_ATTR_LOAD && m->hdr.type != FG_MSG_REQUEST && alen == FG_PROTO_LOAD_LEN) {
			if (!m->load.present) /* the first is fairgate's (proto.h) */
				m->load = (struct fg_answer_load){ 1, rd16(p), rd16(p + 2), rd32(p + 4) };
		} else if (type == 0 || type > FG_ATTR__MAX) { /* a LOAD of another length too */
			m->n_unknown_attrs++;
		} else {
			if (alen > FG_PROTO_MAX_STR)
				return FG_PROTO_EATTR_LEN;
			if (alen == 0 && !empty_allowed(type))
				return FG_PROTO_EEMPTY;
			if (type != FG_ATTR_COOKIE && has_nul(p, alen))
				return FG_PROTO_ENUL;
			struct fg_str v = { (const char *)p, alen };
			if (type == FG_ATTR_GROUP) {
				if (m->n_groups >= FG_PROTO_MAX_GROUPS)
					return FG_PROTO_ETOO_MANY;
				m->groups[m->n_groups++] = v;
			} else {
				struct fg_str *slot = single_attr(m, type);
				if (slot->ptr)
					return FG_PROTO_EATTR_DUP;
				*slot = v;
			}
		}
		p += alen;
		n -= alen;
	}
	return FG_PROTO_OK;
}

enum fg_proto_err fg_proto_decode_header(const uint8_t *buf, size_t len, struct fg_msg *m)
{
	memset(&m->hdr, 0, sizeof(m->hdr));
	m->pad_len = 0;
	m->payload = NULL;
	m->payload_len = 0;
	if (len < FG_PROTO_HDR_LEN)
		return FG_PROTO_ETOO_SHORT;
	if (len > FG_PROTO_MAX_DATAGRAM)
		return FG_PROTO_ETOO_LONG;
	if (rd16(buf + OFF_MAGIC) != FG_PROTO_MAGIC)
		return FG_PROTO_EMAGIC;
	if (buf[OFF_VERSION] != FG_PROTO_VERSION)
		return FG_PROTO_EVERSION;
	struct fg_hdr *h = &m->hdr;
	h->type = buf[OFF_TYPE];
	if (h->type < FG_MSG_REQUEST || h->type > FG_MSG_REJECT)
		return FG_PROTO_ETYPE;
	h->flags = rd16(buf + OFF_FLAGS);
	h->hdr_len = rd16(buf + OFF_HDR_LEN);
	if (h->hdr_len < FG_PROTO_HDR_LEN || h->hdr_len > len)
		return FG_PROTO_EHDR_LEN;
	h->request_id = rd64(buf + OFF_ID);
	h->seats = rd16(buf + OFF_SEATS);
	h->final_seats = rd16(buf + OFF_FINAL_SEATS);
	h->work_hint = rd32(buf + OFF_WORK);
	h->extra_latency_us = rd32(buf + OFF_EXTRA_LAT);
	h->deadline_ms = rd32(buf + OFF_DEADLINE);
	h->reason = rd16(buf + OFF_REASON);
	h->retry_after_ms = rd32(buf + OFF_RETRY);
	if (h->type == FG_MSG_REJECT && (h->reason == FG_REJECT_NONE || h->reason >= FG_REJECT__COUNT))
		return FG_PROTO_EREASON;
	m->payload = buf + h->hdr_len;
	m->payload_len = len - h->hdr_len;
	return FG_PROTO_OK;
}

enum fg_proto_err fg_proto_decode_attrs(const uint8_t *buf, struct fg_msg *m)
{
	memset(&m->user, 0, offsetof(struct fg_msg, groups) - offsetof(struct fg_msg, user)); /* load too */
	m->n_groups = 0;
	m->n_unknown_attrs = 0;
	return decode_attrs(buf + FG_PROTO_HDR_LEN, m->hdr.hdr_len - FG_PROTO_HDR_LEN, m);
}

enum fg_proto_err fg_proto_decode(const uint8_t *buf, size_t len, struct fg_msg *m)
{
	enum fg_proto_err err = fg_proto_decode_header(buf, len, m);
	return err ? err : fg_proto_decode_attrs(buf, m);
}

int fg_proto_peek_id(const uint8_t *buf, size_t len, uint64_t *id)
{
	if (len < OFF_ID + 8 || rd16(buf + OFF_MAGIC) != FG_PROTO_MAGIC)
		return -EINVAL;
	*id = rd64(buf + OFF_ID);
	return 0;
}

static int put_attr(uint8_t *buf, size_t cap, size_t *off, uint16_t type, struct fg_str v)
{
	if (!v.ptr)
		return 0;
	if (v.len > FG_PROTO_MAX_STR)
		return -EINVAL;
	if (*off + FG_PROTO_ATTR_HDR + v.len > cap)
		return -ENOSPC;
	wr16(buf + *off, type);
	wr16(buf + *off + 2, v.len);
	memcpy(buf + *off + FG_PROTO_ATTR_HDR, v.ptr, v.len);
	*off += FG_PROTO_ATTR_HDR + v.len;
	return 0;
}

static void put_hdr(uint8_t *buf, const struct fg_hdr *h, uint16_t hdr_len)
{
	wr16(buf + OFF_MAGIC, FG_PROTO_MAGIC);
	buf[OFF_VERSION] = FG_PROTO_VERSION;
	buf[OFF_TYPE] = h->type;
	wr16(buf + OFF_FLAGS, h->flags);
	wr16(buf + OFF_HDR_LEN, hdr_len);
	wr64(buf + OFF_ID, h->request_id);
	wr16(buf + OFF_SEATS, h->seats);
	wr16(buf + OFF_FINAL_SEATS, h->final_seats);
	wr32(buf + OFF_WORK, h->work_hint);
	wr32(buf + OFF_EXTRA_LAT, h->extra_latency_us);
	wr32(buf + OFF_DEADLINE, h->deadline_ms);
	wr16(buf + OFF_REASON, h->reason);
	wr16(buf + OFF_RESERVED, 0);
	wr32(buf + OFF_RETRY, h->retry_after_ms);
}

int fg_proto_encode(uint8_t *buf, size_t cap, const struct fg_msg *m)
{
	if (m->hdr.type < FG_MSG_REQUEST || m->hdr.type > FG_MSG_REJECT || m->n_groups > FG_PROTO_MAX_GROUPS)
		return -EINVAL;
	if (cap > FG_PROTO_MAX_DATAGRAM)
		cap = FG_PROTO_MAX_DATAGRAM;
	if (cap < FG_PROTO_HDR_LEN)
		return -ENOSPC;
	size_t off = FG_PROTO_HDR_LEN;
	const struct { uint16_t type; struct fg_str v; } singles[] = {
		{ FG_ATTR_USER, m->user }, { FG_ATTR_NAMESPACE, m->ns }, { FG_ATTR_VERB, m->verb },
		{ FG_ATTR_API_GROUP, m->api_group }, { FG_ATTR_RESOURCE, m->resource },
		{ FG_ATTR_SUBRESOURCE, m->subresource }, { FG_ATTR_NAME, m->name }, { FG_ATTR_PATH, m->path },
		{ FG_ATTR_COOKIE, m->cookie },
	};
	int rc;
	for (size_t i = 0; i < sizeof(singles) / sizeof(singles[0]); i++)
		if ((rc = put_attr(buf, cap, &off, singles[i].type, singles[i].v)))
			return rc;
	for (unsigned i = 0; i < m->n_groups; i++)
		if ((rc = put_attr(buf, cap, &off, FG_ATTR_GROUP, m->groups[i])))
			return rc;
	if (m->load.present) {
		uint8_t v[FG_PROTO_LOAD_LEN];
		fg_proto_load_value(v, &m->load);
		if ((rc = put_attr(buf, cap, &off, FG_ATTR_LOAD, (struct fg_str){ (const char *)v, sizeof(v) })))
			return rc;
	}
	if (m->pad_len) {
		static const char zeros[FG_PROTO_MAX_STR];
		if (m->pad_len > sizeof(zeros))
			return -EINVAL;
		if ((rc = put_attr(buf, cap, &off, FG_ATTR_PADDING, (struct fg_str){ zeros, m->pad_len })))
			return rc;
	}
	size_t hdr_len = off;
	if (m->payload_len) {
		if (off + m->payload_len > cap)
			return -ENOSPC;
		memmove(buf + off, m->payload, m->payload_len);
		off += m->payload_len;
	}
	put_hdr(buf, &m->hdr, (uint16_t)hdr_len);
	return (int)off;
}

int fg_proto_encode_reject(uint8_t *buf, size_t cap, uint64_t request_id,
			   enum fg_reject_reason reason, uint32_t retry_after_ms)
{
	if (cap < FG_PROTO_HDR_LEN)
		return -ENOSPC;
	struct fg_hdr h = { .type = FG_MSG_REJECT, .request_id = request_id,
			    .reason = (uint16_t)reason, .retry_after_ms = retry_after_ms };
	put_hdr(buf, &h, FG_PROTO_HDR_LEN);
	return FG_PROTO_HDR_LEN;
}

int fg_proto_encode_cookie_reject(uint8_t *buf, size_t cap, uint64_t request_id, uint32_t retry_after_ms,
				  const uint8_t *cookie, uint16_t cookie_len)
{
	size_t off = FG_PROTO_HDR_LEN;
	if (cap < FG_PROTO_HDR_LEN)
		return -ENOSPC;
	int rc = cookie ? put_attr(buf, cap, &off, FG_ATTR_COOKIE, (struct fg_str){ (const char *)cookie, cookie_len }) : 0;
	if (rc)
		return rc;
	struct fg_hdr h = { .type = FG_MSG_REJECT, .request_id = request_id,
			    .reason = FG_REJECT_RETRY_WITH_COOKIE, .retry_after_ms = retry_after_ms };
	put_hdr(buf, &h, (uint16_t)off);
	return (int)off;
}

void fg_proto_load_value(uint8_t out[FG_PROTO_LOAD_LEN], const struct fg_answer_load *l)
{
	wr16(out, l->level_permille);
	wr16(out + 2, l->instance_permille);
	wr32(out + 4, l->wait_us);
}

int fg_proto_blank_loads(uint8_t *buf, size_t len)
{
	size_t hdr_len = rd16(buf + OFF_HDR_LEN), off = FG_PROTO_HDR_LEN;
	if (len < FG_PROTO_HDR_LEN || hdr_len < FG_PROTO_HDR_LEN || hdr_len > len)
		return -EINVAL;
	int count = 0;
	while (off < hdr_len) {
		if (hdr_len - off < FG_PROTO_ATTR_HDR)
			return -EINVAL;
		uint16_t type = rd16(buf + off), alen = rd16(buf + off + 2);
		if (alen > hdr_len - off - FG_PROTO_ATTR_HDR)
			return -EINVAL;
		if (type == FG_ATTR_LOAD)
			wr16(buf + off, FG_ATTR_PADDING);
		count++;
		off += FG_PROTO_ATTR_HDR + alen;
	}
	return count;
}

int fg_proto_insert_load(uint8_t *buf, size_t len, size_t cap, const uint8_t value[FG_PROTO_LOAD_LEN])
{
	const size_t add = FG_PROTO_ATTR_HDR + FG_PROTO_LOAD_LEN;
	uint16_t hdr_len = rd16(buf + OFF_HDR_LEN);
	if (cap > FG_PROTO_MAX_DATAGRAM)
		cap = FG_PROTO_MAX_DATAGRAM;
	if (len < FG_PROTO_HDR_LEN || len + add > cap || hdr_len + add > UINT16_MAX)
		return -ENOSPC;
	memmove(buf + FG_PROTO_HDR_LEN + add, buf + FG_PROTO_HDR_LEN, len - FG_PROTO_HDR_LEN);
	wr16(buf + FG_PROTO_HDR_LEN, FG_ATTR_LOAD);
	wr16(buf + FG_PROTO_HDR_LEN + 2, FG_PROTO_LOAD_LEN);
	memcpy(buf + FG_PROTO_HDR_LEN + FG_PROTO_ATTR_HDR, value, FG_PROTO_LOAD_LEN);
	wr16(buf + OFF_HDR_LEN, (uint16_t)(hdr_len + add));
	return (int)(len + add);
}

void fg_proto_set_request_id(uint8_t *buf, uint64_t id) { wr64(buf + OFF_ID, id); }
void fg_proto_add_flags(uint8_t *buf, uint16_t flags) { wr16(buf + OFF_FLAGS, rd16(buf + OFF_FLAGS) | flags); }
uint64_t fg_proto_get_request_id(const uint8_t *buf) { return rd64(buf + OFF_ID); }

const char *fg_proto_strerror(enum fg_proto_err err)
{
	static const char *const names[FG_PROTO_ERR__COUNT] = {
		[FG_PROTO_OK] = "ok",
		[FG_PROTO_ETOO_SHORT] = "datagram shorter than the fixed header",
		[FG_PROTO_ETOO_LONG] = "datagram longer than the protocol limit",
		[FG_PROTO_EMAGIC] = "bad magic",
		[FG_PROTO_EVERSION] = "unsupported protocol version",
		[FG_PROTO_ETYPE] = "unknown message type",
		[FG_PROTO_EHDR_LEN] = "header length out of range",
		[FG_PROTO_EATTR_TRUNC] = "attribute truncated",
		[FG_PROTO_EATTR_LEN] = "attribute value too long",
		[FG_PROTO_EATTR_DUP] = "single-valued attribute repeated",
		[FG_PROTO_ETOO_MANY] = "too many attributes or groups",
		[FG_PROTO_EREASON] = "unknown reject reason",
		[FG_PROTO_EEMPTY] = "empty attribute value",
		[FG_PROTO_ENUL] = "NUL byte in attribute value",
	};
	return (unsigned)err < FG_PROTO_ERR__COUNT ? names[err] : "unknown error";
}

static const char *const reason_names[FG_REJECT__COUNT] = {
	[FG_REJECT_NONE] = "none",
	[FG_REJECT_QUEUE_FULL] = "queue-full",
	[FG_REJECT_CONCURRENCY_LIMIT] = "concurrency-limit",
	[FG_REJECT_TIME_OUT] = "time-out",
	[FG_REJECT_INVALID] = "invalid",
	[FG_REJECT_NO_BACKEND] = "no-backend",
	[FG_REJECT_BACKEND_TIMEOUT] = "backend-timeout",
	[FG_REJECT_SHUTTING_DOWN] = "shutting-down",
	[FG_REJECT_RETRY_WITH_COOKIE] = "retry-with-cookie",
};

const char *fg_reject_reason_name(enum fg_reject_reason r)
{
	return (unsigned)r < FG_REJECT__COUNT ? reason_names[r] : "unknown";
}

enum fg_reject_reason fg_reject_reason_parse(const char *name)
{
	for (int r = 1; r < FG_REJECT__COUNT; r++)
		if (!strcmp(name, reason_names[r]))
			return (enum fg_reject_reason)r;
	return FG_REJECT_NONE;
}

const char *fg_msg_type_name(uint8_t type)
{
	switch (type) {
	case FG_MSG_REQUEST: return "request";
	case FG_MSG_RESPONSE: return "response";
	case FG_MSG_REJECT: return "reject";
	default: return "unknown";
	}
}

struct fg_str fg_str_of(const char *s)
{
	struct fg_str v = { s, s ? (uint16_t)strnlen(s, 0xffff) : 0 };
	return v;
}
