/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sock_io — the kernel-socket I/O mode: one lane per worker, batched with
 * recvmmsg/sendmmsg, buffers from the lane's own fixed pool.  A lane alone
 * (one worker) has one UDP socket for clients and backends alike, bound to
 * the listen address.  One of several lanes has two: a client socket bound
 * to the listen address with SO_REUSEPORT (the kernel spreads the clients
 * over the lanes by address and port, so a client's datagrams all reach the
 * same lane), and a backend-side socket on an ephemeral port of the listen
 * address, from which its requests go to the backends, so that their
 * answers come back to the worker that sent them.
 * Thread contract: one worker thread per sock_io.
 */
#ifndef FG_SOCK_IO_H
#define FG_SOCK_IO_H

#include <stdbool.h>

#include "endpoint.h"
#include "io.h"

struct fg_sock_io;

/* A lane bound to `listen`, one of several (SO_REUSEPORT and a backend-side
 * socket) or alone; `n_buffers` bounds the datagrams it holds at once. */
struct fg_sock_io *fg_sock_io_create(const struct fg_endpoint *listen, uint32_t n_buffers, bool one_of_several,
				     int *err);

/* 0 when nothing holds `listen` (a socket bound to it and closed again),
 * else -errno (-EADDRINUSE).  Before the lanes of several workers bind with
 * SO_REUSEPORT, which would otherwise share the port with another daemon
 * of the same user that did the same; a later one finds it taken. */
int fg_sock_io_claim_port(const struct fg_endpoint *listen);
void fg_sock_io_free(struct fg_sock_io *s);
struct fg_io fg_sock_io_as_io(struct fg_sock_io *s);

#endif
