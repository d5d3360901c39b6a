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

/* Backends: answer `req` (a decoded REQUEST) with a RESPONSE carrying the
 * same request id and the given payload. */
int fg_respond(int fd, const struct fg_msg *req, const struct sockaddr_in *to, const void *payload, size_t len);

#endif
