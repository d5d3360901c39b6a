/* SPDX-License-Identifier: Apache-2.0 */
/* client — UDP helpers around the codec; see client.h. */
#include "client.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "endpoint.h"

static int to_sockaddr(const char *s, struct sockaddr_in *a)
{
	struct fg_endpoint ep;
	if (fg_endpoint_parse(s, &ep))
		return -EINVAL;
	*a = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = ep.port, .sin_addr.s_addr = ep.ip };
	return 0;
}

int fg_udp_open(const char *bind_addr, const char *connect_to)
{
	struct sockaddr_in local = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in peer;
	if ((bind_addr && to_sockaddr(bind_addr, &local)) || (connect_to && to_sockaddr(connect_to, &peer)))
		return -EINVAL;
	if (!bind_addr && connect_to)
		local.sin_addr.s_addr = htonl(INADDR_ANY);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int sz = 1 << 20;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (bind(fd, (struct sockaddr *)&local, sizeof(local)) < 0 ||
	    (connect_to && connect(fd, (struct sockaddr *)&peer, sizeof(peer)) < 0)) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

void fg_msg_init(struct fg_msg *m, enum fg_msg_type type, uint64_t request_id)
{
	memset(m, 0, sizeof(*m));
	m->hdr.type = (uint8_t)type;
	m->hdr.request_id = request_id;
}

int fg_msg_add_group(struct fg_msg *m, const char *group)
{
	if (m->n_groups >= FG_PROTO_MAX_GROUPS)
		return -ENOSPC;
	m->groups[m->n_groups++] = fg_str_of(group);
	return 0;
}

int fg_send_msg(int fd, const struct fg_msg *m, const struct sockaddr_in *to)
{
	uint8_t buf[FG_PROTO_MAX_DATAGRAM];
	int len = fg_proto_encode(buf, sizeof(buf), m);
	if (len < 0)
		return len;
	ssize_t n = to ? sendto(fd, buf, (size_t)len, 0, (const struct sockaddr *)to, sizeof(*to))
		       : send(fd, buf, (size_t)len, 0);
	return n < 0 ? -errno : len;
}

int fg_recv_msg(int fd, uint8_t *buf, size_t cap, struct fg_msg *m, struct sockaddr_in *from, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int rc;
	while ((rc = poll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR)
		;
	if (rc < 0)
		return -errno;
	if (rc == 0)
		return -ETIMEDOUT;
	socklen_t alen = sizeof(*from);
	ssize_t n = recvfrom(fd, buf, cap, MSG_DONTWAIT, (struct sockaddr *)from, from ? &alen : NULL);
	if (n < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	if (fg_proto_decode(buf, (size_t)n, m) != FG_PROTO_OK)
		return -EBADMSG;
	return (int)n;
}

int fg_respond(int fd, const struct fg_msg *req, const struct sockaddr_in *to, const void *payload, size_t len)
{
	struct fg_msg r;
	fg_msg_init(&r, FG_MSG_RESPONSE, req->hdr.request_id);
	r.payload = payload;
	r.payload_len = len;
	return fg_send_msg(fd, &r, to);
}

/* The encoded length of m without padding, as fg_proto_encode computes it. */
static size_t encoded_len(const struct fg_msg *m)
{
	const struct fg_str *singles[] = { &m->user, &m->ns, &m->verb, &m->api_group, &m->resource,
					   &m->subresource, &m->name, &m->path, &m->cookie };
	size_t n = FG_PROTO_HDR_LEN + m->payload_len;
	for (size_t i = 0; i < sizeof(singles) / sizeof(singles[0]); i++)
		if (singles[i]->ptr)
			n += FG_PROTO_ATTR_HDR + singles[i]->len;
	for (unsigned i = 0; i < m->n_groups; i++)
		n += FG_PROTO_ATTR_HDR + m->groups[i].len;
	return n;
}

void fg_client_prepare(const struct fg_cookie_cache *c, struct fg_msg *m)
{
	m->pad_len = 0;
	if (c->len) {
		m->cookie = (struct fg_str){ (const char *)c->bytes, c->len };
		return;
	}
	m->cookie = (struct fg_str){ NULL, 0 };
	size_t n = encoded_len(m);
	if (n < FG_PROTO_MIN_CHALLENGEABLE) /* the padding attribute's own header counts too */
		m->pad_len = n + FG_PROTO_ATTR_HDR >= FG_PROTO_MIN_CHALLENGEABLE
				     ? 1 : (uint16_t)(FG_PROTO_MIN_CHALLENGEABLE - FG_PROTO_ATTR_HDR - n);
}

int fg_client_take_cookie(struct fg_cookie_cache *c, const struct fg_msg *m)
{
	if (m->hdr.type != FG_MSG_REJECT || m->hdr.reason != FG_REJECT_RETRY_WITH_COOKIE)
		return 0;
	if (m->cookie.ptr && m->cookie.len && m->cookie.len <= sizeof(c->bytes)) {
		memcpy(c->bytes, m->cookie.ptr, m->cookie.len);
		c->len = m->cookie.len;
	} else {
		c->len = 0; /* a bare challenge: the next request is padded */
	}
	return 1;
}

int fg_client_call(int fd, struct fg_cookie_cache *c, struct fg_msg *req, uint8_t *buf, size_t cap,
		   struct fg_msg *reply, int timeout_ms)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		fg_client_prepare(c, req);
		int rc = fg_send_msg(fd, req, NULL);
		if (rc < 0)
			return rc;
		for (;;) {
			rc = fg_recv_msg(fd, buf, cap, reply, NULL, timeout_ms);
			if (rc == -EBADMSG || (rc >= 0 && reply->hdr.request_id != req->hdr.request_id))
				continue; /* not ours: keep waiting */
			break;
		}
		if (rc < 0 || !fg_client_take_cookie(c, reply))
			return rc;
	}
	return -EPROTO; /* challenged three times running: the server keeps refusing our cookie */
}
