/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto — wire protocol v1 codec (docs/protocol.md).
 *
 * A message is a UDP datagram: a fixed 40-byte header (network byte order),
 * then type-length-value attributes, then an opaque payload that fairgate
 * forwards unchanged.  The decoder never copies: a decoded message points into
 * the caller's buffer, which must outlive it.  It validates every length
 * against the datagram before reading, so any byte string is safe input.
 *
 * Thread contract: pure functions, no global state; call from any thread.
 */
#ifndef FG_PROTO_H
#define FG_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define FG_PROTO_MAGIC 0x4647u /* "FG" */
#define FG_PROTO_VERSION 1u
#define FG_PROTO_HDR_LEN 40u

/* Documented limits (docs/protocol.md §Limits). */
#define FG_PROTO_MAX_DATAGRAM 8192u /* whole message, header included */
#define FG_PROTO_MAX_STR 512u       /* one string attribute value */
#define FG_PROTO_MAX_GROUPS 256u    /* GROUP attributes per request (directory users have hundreds) */
#define FG_PROTO_MAX_ATTRS (FG_PROTO_MAX_GROUPS + 64u) /* attributes per message, unknown ones included */
#define FG_PROTO_ATTR_HDR 4u        /* u16 type + u16 length */
#define FG_PROTO_COOKIE_LEN 16u     /* the cookies fairgate sends (clients treat them as opaque) */
#define FG_PROTO_MAX_COOKIE 64u     /* the longest cookie a client keeps */
/* A request at least this long can be answered with a cookie (a REJECT is
 * never longer than the request it answers): clients without a cookie pad. */
#define FG_PROTO_MIN_CHALLENGEABLE (FG_PROTO_HDR_LEN + FG_PROTO_ATTR_HDR + FG_PROTO_COOKIE_LEN)

enum fg_msg_type {
	FG_MSG_REQUEST = 1,
	FG_MSG_RESPONSE = 2,
	FG_MSG_REJECT = 3,
};

enum fg_reject_reason {
	FG_REJECT_NONE = 0,
	FG_REJECT_QUEUE_FULL = 1,
	FG_REJECT_CONCURRENCY_LIMIT = 2,
	FG_REJECT_TIME_OUT = 3,
	FG_REJECT_INVALID = 4,
	FG_REJECT_NO_BACKEND = 5,
	FG_REJECT_BACKEND_TIMEOUT = 6,
	FG_REJECT_SHUTTING_DOWN = 7,
	FG_REJECT_RETRY_WITH_COOKIE = 8, /* prove the source address: resend with the COOKIE attribute */
	FG_REJECT__COUNT
};

enum fg_attr_type {
	FG_ATTR_USER = 1,
	FG_ATTR_GROUP = 2, /* repeatable */
	FG_ATTR_NAMESPACE = 3,
	FG_ATTR_VERB = 4,
	FG_ATTR_API_GROUP = 5,
	FG_ATTR_RESOURCE = 6,
	FG_ATTR_SUBRESOURCE = 7,
	FG_ATTR_NAME = 8,
	FG_ATTR_PATH = 9, /* non-resource path; present => non-resource request */
	FG_ATTR_COOKIE = 10, /* opaque bytes (NUL allowed): an address-validation cookie fairgate sent */
	FG_ATTR__MAX = 10,   /* the request attributes */
	/* Answers only (a request's, or one of another length, is skipped as
	 * unknown): fairgate's load state for the tier in front,
	 * FG_PROTO_LOAD_LEN bytes (struct fg_answer_load).  With answerLoad on,
	 * fairgate blanks a backend's own (fg_proto_blank_loads) and puts its
	 * own first; a decoder takes the first. */
	FG_ATTR_LOAD = 11,
	FG_ATTR_PADDING = 0xfffe, /* ignored (skipped as unknown): makes a request long enough for a cookie */
};

/* Header flags. */
#define FG_FLAG_NON_RESOURCE 0x0001u /* informative; PATH attribute decides */
/* Set by fairgate on a request it forwards from an untrusted source: its user
 * and group attributes are the client's claim, not who fairgate classified
 * it as (security.md). */
#define FG_FLAG_IDENTITY_UNVERIFIED 0x0002u

/* Decoder verdicts; fg_proto_strerror() names them. */
enum fg_proto_err {
	FG_PROTO_OK = 0,
	FG_PROTO_ETOO_SHORT,    /* shorter than the fixed header */
	FG_PROTO_ETOO_LONG,     /* longer than FG_PROTO_MAX_DATAGRAM */
	FG_PROTO_EMAGIC,        /* not a fairgate datagram */
	FG_PROTO_EVERSION,      /* unsupported protocol version */
	FG_PROTO_ETYPE,         /* unknown message type */
	FG_PROTO_EHDR_LEN,      /* header length field out of range */
	FG_PROTO_EATTR_TRUNC,   /* attribute runs past the header length */
	FG_PROTO_EATTR_LEN,     /* attribute value longer than allowed */
	FG_PROTO_EATTR_DUP,     /* a single-valued attribute repeated */
	FG_PROTO_ETOO_MANY,     /* too many attributes or groups */
	FG_PROTO_EREASON,       /* REJECT with unknown reason code */
	FG_PROTO_EEMPTY,        /* empty string value */
	FG_PROTO_ENUL,          /* string value contains a NUL byte */
	FG_PROTO_ERR__COUNT
};

/* The LOAD attribute's value (network order on the wire): u16 the level's
 * load in thousandths ((seats in use + seats waiting) / its limit), u16 the
 * instance's load in thousandths, u32 the level's estimated wait in
 * microseconds; each saturates at its field's largest value. */
#define FG_PROTO_LOAD_LEN 8u
struct fg_answer_load {
	uint8_t present;
	uint16_t level_permille, instance_permille;
	uint32_t wait_us;
};

struct fg_str {
	const char *ptr; /* not NUL-terminated; NULL when absent */
	uint16_t len;
};

/* Fixed header fields, host byte order. */
struct fg_hdr {
	uint8_t type;
	uint16_t flags;
	uint16_t hdr_len;        /* header + attributes; payload starts here */
	uint64_t request_id;
	uint16_t seats;          /* width hint: initial seats, 0 = let fairgate estimate */
	uint16_t final_seats;    /* seats held during extra latency */
	uint32_t work_hint;      /* LIST: estimated objects; mutating: watchers */
	uint32_t extra_latency_us;
	uint32_t deadline_ms;    /* client's remaining budget, 0 = none */
	uint16_t reason;         /* REJECT only */
	uint32_t retry_after_ms; /* REJECT only */
};

struct fg_msg {
	struct fg_hdr hdr;
	struct fg_str user, ns, verb, api_group, resource, subresource, name, path;
	struct fg_str cookie; /* bytes, not text */
	struct fg_answer_load load; /* answers: the first LOAD attribute (present 0: none) */
	struct fg_str groups[FG_PROTO_MAX_GROUPS];
	uint16_t n_groups;
	uint16_t n_unknown_attrs; /* skipped for forward compatibility */
	uint16_t pad_len;         /* encode only: a PADDING attribute with this many zero bytes */
	const uint8_t *payload;
	size_t payload_len;
};

/* Decode buf[0..len).  On error *msg is partially filled and must not be used. */
enum fg_proto_err fg_proto_decode(const uint8_t *buf, size_t len, struct fg_msg *msg);

/* The same in two steps, for a relay that reads the attributes of requests
 * only: the fixed header (and payload bounds; the attribute fields are left
 * as they are), then the attribute area of a message whose msg->hdr
 * fg_proto_decode_header filled (this resets the attribute fields first, so
 * a header may be decoded early and its msg->hdr copied into another msg). */
enum fg_proto_err fg_proto_decode_header(const uint8_t *buf, size_t len, struct fg_msg *msg);
enum fg_proto_err fg_proto_decode_attrs(const uint8_t *buf, struct fg_msg *msg);

/*
 * Read only the request id, for answering a datagram that failed to decode
 * with REJECT invalid.  Returns 0 when magic and id are readable, -EINVAL
 * otherwise.
 */
int fg_proto_peek_id(const uint8_t *buf, size_t len, uint64_t *id);

/* Encode msg (header fields, attributes, payload) into buf.  hdr_len is
 * computed.  Returns the datagram length or -ENOSPC / -EINVAL. */
int fg_proto_encode(uint8_t *buf, size_t cap, const struct fg_msg *msg);

/* Encode a bare REJECT (no attributes, no payload).  Returns its length
 * (FG_PROTO_HDR_LEN) or -ENOSPC. */
int fg_proto_encode_reject(uint8_t *buf, size_t cap, uint64_t request_id,
			   enum fg_reject_reason reason, uint32_t retry_after_ms);

/* A REJECT retry-with-cookie carrying cookie[0..cookie_len) as its COOKIE
 * attribute (cookie NULL: a bare one, for a request too short to be answered
 * with a longer datagram).  Returns its length or -ENOSPC. */
int fg_proto_encode_cookie_reject(uint8_t *buf, size_t cap, uint64_t request_id, uint32_t retry_after_ms,
				  const uint8_t *cookie, uint16_t cookie_len);

/* The LOAD attribute's value for these figures (saturating), FG_PROTO_LOAD_LEN bytes. */
void fg_proto_load_value(uint8_t out[FG_PROTO_LOAD_LEN], const struct fg_answer_load *load);

/* A relayed answer's own LOAD attributes (a backend's claim) become
 * PADDING in place, so that only fairgate's can be read as one.  Returns
 * the answer's attribute count, or -EINVAL when its attribute area does not
 * parse (left as it came).  Bounded by its header length, never past len. */
int fg_proto_blank_loads(uint8_t *buf, size_t len);

/* Put a LOAD attribute with this value first among the attributes of the
 * message in buf[0..len) (its header checked: fg_proto_decode_header), moving
 * the rest FG_PROTO_ATTR_HDR + FG_PROTO_LOAD_LEN bytes along.  Returns the
 * new length, or -ENOSPC when that would pass cap (the message unchanged). */
int fg_proto_insert_load(uint8_t *buf, size_t len, size_t cap, const uint8_t value[FG_PROTO_LOAD_LEN]);

/* In-place rewrites of a datagram already validated by fg_proto_decode. */
void fg_proto_set_request_id(uint8_t *buf, uint64_t request_id);
void fg_proto_add_flags(uint8_t *buf, uint16_t flags);
uint64_t fg_proto_get_request_id(const uint8_t *buf);

const char *fg_proto_strerror(enum fg_proto_err err);
const char *fg_reject_reason_name(enum fg_reject_reason reason);
/* Returns the reason for a name such as "queue-full", or FG_REJECT_NONE. */
enum fg_reject_reason fg_reject_reason_parse(const char *name);
const char *fg_msg_type_name(uint8_t type);

/* Convenience for builders: a string view of a C string (NULL stays absent). */
struct fg_str fg_str_of(const char *s);

#endif
