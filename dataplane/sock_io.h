/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sock_io — the kernel-socket I/O mode: one UDP socket for clients and
 * backends alike, batched with recvmmsg/sendmmsg, buffers from a fixed pool.
 * Thread contract: one worker thread per sock_io.
 */
#ifndef FG_SOCK_IO_H
#define FG_SOCK_IO_H

#include "endpoint.h"
#include "io.h"

struct fg_sock_io;

/* Bind to `listen`; `n_buffers` bounds the datagrams held at once. */
struct fg_sock_io *fg_sock_io_create(const struct fg_endpoint *listen, uint32_t n_buffers, int *err);
void fg_sock_io_free(struct fg_sock_io *s);
struct fg_io fg_sock_io_as_io(struct fg_sock_io *s);

#endif
