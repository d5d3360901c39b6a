/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client — a small library for writing fairgate clients and backends in C
 * (docs/client-library.md has a walk-through).  It wraps the codec (proto.h)
 * with UDP sockets:
 *
 *   client:  fd = fg_udp_open(NULL, "127.0.0.1:7400");
 *            fg_msg_init(&m, FG_MSG_REQUEST, id); m.user = fg_str_of("alice"); ...
 *            fg_send_msg(fd, &m, NULL);
 *            fg_recv_msg(fd, buf, sizeof buf, &reply, NULL, 1000);
 *   backend: fd = fg_udp_open("127.0.0.1:7500", NULL);
 *            fg_recv_msg(fd, buf, sizeof buf, &req, &from, -1);
 *            fg_respond(fd, &req, &from, body, body_len);
 *
 * Address validation (docs/security.md): fairgate may answer a request from
 * a source it does not trust with REJECT retry-with-cookie.  Keep one
 * struct fg_cookie_cache per server, pass requests through
 * fg_client_prepare before sending and answers through fg_client_take_cookie
 * (which says when to send the request again), or let fg_client_call do all
 * of it.
 *
 * Functions return 0 (or a length) on success and -errno on failure.
 * Thread contract: no shared state; one fd per thread is simplest.
 */
#ifndef FG_CLIENT_H
#define FG_CLIENT_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/* A UDP socket bound to `bind_addr` ("ADDR:PORT", NULL = any port on
 * loopback) and, if `connect_to` is given, connected to it.  Returns the fd
 * or -errno. */
int fg_udp_open(const char *bind_addr, const char *connect_to);

/* Zero a message and set its type and request id. */
void fg_msg_init(struct fg_msg *m, enum fg_msg_type type, uint64_t request_id);
/* Append a group; -ENOSPC past FG_PROTO_MAX_GROUPS. */
int fg_msg_add_group(struct fg_msg *m, const char *group);

/* Encode and send (to `to`, or the connected peer when NULL).  Returns the
 * datagram length or -errno. */
int fg_send_msg(int fd, const struct fg_msg *m, const struct sockaddr_in *to);

/*
 * Receive one datagram into buf and decode it into *m (pointing into buf).
 * timeout_ms < 0 waits forever.  Returns the datagram length, -ETIMEDOUT,
 * or -EBADMSG for a datagram that does not decode (it is consumed).
 */
int fg_recv_msg(int fd, uint8_t *buf, size_t cap, struct fg_msg *m, struct sockaddr_in *from, int timeout_ms);

/* The cookie a server sent this client (len 0: none yet). */
struct fg_cookie_cache {
	uint16_t len;
	uint8_t bytes[FG_PROTO_MAX_COOKIE];
};

/* Before sending request m: attach the cached cookie, or pad m so that a
 * challenge can carry one.  m's cookie points into c: keep c alive until sent. */
void fg_client_prepare(const struct fg_cookie_cache *c, struct fg_msg *m);

/* After receiving answer m: 1 when it was a REJECT retry-with-cookie (its
 * cookie, if any, is now cached): send the request again; 0 otherwise. */
int fg_client_take_cookie(struct fg_cookie_cache *c, const struct fg_msg *m);

/*
 * Send request *req on connected fd and wait up to timeout_ms for the answer
 * with its id, answering a cookie challenge by sending again (at most twice).
 * The answer is decoded into *reply (pointing into buf).  Returns its length,
 * -ETIMEDOUT or -errno.
 */
int fg_client_call(int fd, struct fg_cookie_cache *c, struct fg_msg *req, uint8_t *buf, size_t cap,
		   struct fg_msg *reply, int timeout_ms);

/* Backends: answer `req` (a decoded REQUEST) with a RESPONSE carrying the
 * same request id and the given payload. */
int fg_respond(int fd, const struct fg_msg *req, const struct sockaddr_in *to, const void *payload, size_t len);

#endif
