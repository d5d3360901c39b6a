/* SPDX-License-Identifier: Apache-2.0 */
/* sock_io — kernel UDP sockets with recvmmsg/sendmmsg; see sock_io.h. */
#include "sock_io.h"

#include <errno.h>
#include <net/if.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "defs.h"
#include "proto.h"

#define SOCK_TX_BATCH 64u
#define SOCK_BUF_BYTES (4u << 20) /* kernel socket buffers: absorb bursts */
#define SOCK_TX_MAX_WAITS 100u    /* 1 ms polls before a full send buffer drops */

/* One socket's send batch. */
struct sock_tx {
	int fd;
	struct mmsghdr msgs[SOCK_TX_BATCH];
	struct iovec iov[SOCK_TX_BATCH];
	struct sockaddr_in addr[SOCK_TX_BATCH];
	uint32_t buf[SOCK_TX_BATCH];
	uint8_t answer[SOCK_TX_BATCH];   /* the datagram is an answer to a client */
	unsigned n;
};

struct fg_sock_io {
	int fd;                 /* clients' datagrams (alone: the backends' too) */
	int backend_fd;         /* one of several lanes: this lane's backend side (an ephemeral port); else -1 */
	uint8_t *bufs;          /* n_bufs × FG_PROTO_MAX_DATAGRAM */
	uint32_t n_bufs;
	uint32_t *free_stack;
	uint32_t n_free;
	struct sock_tx tx[2];   /* [0] answers to clients, [1] requests to backends (one lane alone: both on fd) */
	unsigned tx_dropped, tx_answers_dropped; /* since the last flush */
	unsigned lo_ifindex;    /* loopback: the only interface a 127/8 source may arrive on */
	uint64_t dropped_martians;
};

/* A buffer's handle is its first byte, its room one datagram (pkt.h). */
_Static_assert(FG_PROTO_MAX_DATAGRAM <= FG_PKT_MAX_SPAN, "a socket buffer fits a request slot's offsets");

static uint8_t *buf_at(struct fg_sock_io *s, uint32_t i) { return s->bufs + (size_t)i * FG_PROTO_MAX_DATAGRAM; }
static uint32_t buf_index(struct fg_sock_io *s, const void *h)
{
	return (uint32_t)(((const uint8_t *)h - s->bufs) / FG_PROTO_MAX_DATAGRAM);
}

static int sio_alloc(void *ctx, struct fg_pkt *p)
{
	struct fg_sock_io *s = ctx;
	if (!s->n_free)
		return -ENOBUFS;
	uint32_t i = s->free_stack[--s->n_free];
	p->handle = p->data = buf_at(s, i);
	p->len = 0;
	p->cap = FG_PROTO_MAX_DATAGRAM;
	return 0;
}

static void sio_free(void *ctx, struct fg_pkt *p)
{
	struct fg_sock_io *s = ctx;
	s->free_stack[s->n_free++] = buf_index(s, p->handle);
	p->handle = NULL;
}

/* A loopback source that did not arrive on the loopback interface: a host
 * with route_localnet=1 (kube-proxy sets it) routes such datagrams from the
 * wire, and loopback is a trusted source by default (security.md). */
static bool martian_loopback(const struct fg_sock_io *s, struct msghdr *h, uint32_t src)
{
	if (!fg_ip_is_loopback(src))
		return false;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c))
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			return (unsigned)pi.ipi_ifindex != s->lo_ifindex;
		}
	return true; /* no arrival interface: not believed */
}

/* Up to max datagrams from one socket into pkts. */
static unsigned rx_socket(struct fg_sock_io *s, int fd, struct fg_pkt *pkts, unsigned max)
{
	struct mmsghdr msgs[FG_RX_BURST];
	struct iovec iov[FG_RX_BURST];
	struct sockaddr_in from[FG_RX_BURST];
	union {
		char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
		struct cmsghdr align;
	} ctl[FG_RX_BURST];
	if (max > FG_RX_BURST)
		max = FG_RX_BURST;
	if (max > s->n_free)
		max = s->n_free;
	for (unsigned i = 0; i < max; i++) {
		sio_alloc(s, &pkts[i]);
		/* One byte more than the limit, so an oversized datagram is seen as such. */
		iov[i] = (struct iovec){ pkts[i].data, FG_PROTO_MAX_DATAGRAM };
		msgs[i].msg_hdr = (struct msghdr){ .msg_name = &from[i], .msg_namelen = sizeof(from[i]),
						   .msg_iov = &iov[i], .msg_iovlen = 1,
						   .msg_control = ctl[i].buf, .msg_controllen = sizeof(ctl[i].buf) };
	}
	int n = max ? recvmmsg(fd, msgs, max, MSG_DONTWAIT, NULL) : 0;
	if (n < 0)
		n = 0;
	unsigned out = 0;
	for (unsigned i = 0; i < max; i++) {
		if (i >= (unsigned)n || martian_loopback(s, &msgs[i].msg_hdr, from[i].sin_addr.s_addr)) {
			if (i < (unsigned)n) /* single writer; the control thread reads (io.h) */
				__atomic_store_n(&s->dropped_martians, s->dropped_martians + 1, __ATOMIC_RELAXED);
			sio_free(s, &pkts[i]);
			continue;
		}
		struct fg_pkt *p = &pkts[out++];
		*p = pkts[i];
		/* A truncated datagram is longer than the protocol allows. */
		p->len = (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) ? FG_PROTO_MAX_DATAGRAM + 1 : msgs[i].msg_len;
		memset(&p->peer, 0, sizeof(p->peer));
		p->peer.ip = from[i].sin_addr.s_addr;
		p->peer.port = from[i].sin_port;
		p->backend_side = fd == s->backend_fd;
	}
	return out;
}

/* The backend side first: answers end requests and free their seats and
 * buffers; then clients' requests. */
static unsigned sio_rx(void *ctx, struct fg_pkt *pkts, unsigned max)
{
	struct fg_sock_io *s = ctx;
	unsigned n = s->backend_fd >= 0 ? rx_socket(s, s->backend_fd, pkts, max) : 0;
	return n + rx_socket(s, s->fd, pkts + n, max - n);
}

/* Send a batch; datagrams the kernel refuses are counted in tx_dropped. */
static void tx_batch(struct fg_sock_io *s, struct sock_tx *t)
{
	unsigned done = 0, waits = 0;
	while (done < t->n) {
		int n = sendmmsg(t->fd, t->msgs + done, t->n - done, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == ENOBUFS) && waits++ < SOCK_TX_MAX_WAITS) {
			/* Send buffer full: give the kernel a moment rather than drop an answer. */
			struct pollfd pfd = { .fd = t->fd, .events = POLLOUT };
			poll(&pfd, 1, 1);
			continue;
		}
		if (n <= 0) {
			/* Refused for good (no route, peer gone): drop the head, count it. */
			s->tx_dropped++;
			s->tx_answers_dropped += t->answer[done];
			n = 1;
		}
		done += (unsigned)n;
	}
	for (unsigned i = 0; i < t->n; i++)
		s->free_stack[s->n_free++] = t->buf[i];
	t->n = 0;
}

static unsigned sio_flush(void *ctx, unsigned *answers_dropped)
{
	struct fg_sock_io *s = ctx;
	tx_batch(s, &s->tx[0]);
	tx_batch(s, &s->tx[1]);
	unsigned dropped = s->tx_dropped;
	*answers_dropped = s->tx_answers_dropped;
	s->tx_dropped = s->tx_answers_dropped = 0;
	return dropped;
}

static void sio_tx(void *ctx, struct fg_pkt *p)
{
	struct fg_sock_io *s = ctx;
	struct sock_tx *t = &s->tx[!p->answer];
	if (t->n == SOCK_TX_BATCH)
		tx_batch(s, t);
	unsigned i = t->n++;
	t->addr[i] = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = p->peer.port,
					   .sin_addr.s_addr = p->peer.ip };
	t->iov[i] = (struct iovec){ p->data, p->len };
	t->msgs[i].msg_hdr = (struct msghdr){ .msg_name = &t->addr[i], .msg_namelen = sizeof(t->addr[i]),
					      .msg_iov = &t->iov[i], .msg_iovlen = 1 };
	t->buf[i] = buf_index(s, p->handle);
	t->answer[i] = p->answer;
	p->handle = NULL;
}

static void sio_wait(void *ctx, uint64_t timeout_ns)
{
	struct fg_sock_io *s = ctx;
	struct pollfd pfd[2] = { { .fd = s->fd, .events = POLLIN }, { .fd = s->backend_fd, .events = POLLIN } };
	struct timespec ts = { (time_t)(timeout_ns / 1000000000ull), (long)(timeout_ns % 1000000000ull) };
	ppoll(pfd, s->backend_fd >= 0 ? 2 : 1, &ts, NULL);
}

static uint64_t sio_in_use(void *ctx)
{
	struct fg_sock_io *s = ctx;
	return s->n_bufs - s->n_free;
}

static uint64_t sio_pool_size(void *ctx)
{
	return ((struct fg_sock_io *)ctx)->n_bufs;
}

static uint64_t sio_martians(void *ctx)
{
	return __atomic_load_n(&((struct fg_sock_io *)ctx)->dropped_martians, __ATOMIC_RELAXED);
}

static const struct fg_io_ops sock_ops = {
	.rx = sio_rx, .tx = sio_tx, .flush = sio_flush, .alloc = sio_alloc, .free = sio_free,
	.wait = sio_wait, .tick = NULL, .in_use = sio_in_use, .pool_size = sio_pool_size, .martians = sio_martians,
	.pool_per_lane = true, .max_datagram = FG_PROTO_MAX_DATAGRAM,
};

struct fg_io fg_sock_io_as_io(struct fg_sock_io *s) { return (struct fg_io){ &sock_ops, s }; }

/* A UDP socket with the arrival interface reported (the martian check),
 * large buffers, bound to ip:port (port 0: an ephemeral one).  The fd, or
 * -errno. */
static int open_socket(uint32_t ip, uint16_t port, bool reuse_port)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int sz = SOCK_BUF_BYTES, on = 1;
	if (setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on)) < 0 ||
	    (reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) < 0))
		goto err;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = port, .sin_addr.s_addr = ip };
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto err;
	return fd;
err:;
	int e = -errno;
	close(fd);
	return e;
}

int fg_sock_io_claim_port(const struct fg_endpoint *listen)
{
	int fd = open_socket(listen->ip, listen->port, false);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

struct fg_sock_io *fg_sock_io_create(const struct fg_endpoint *listen, uint32_t n_buffers, bool one_of_several,
				     int *err)
{
	struct fg_sock_io *s = calloc(1, sizeof(*s));
	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	s->fd = s->backend_fd = -1;
	s->n_bufs = n_buffers + FG_RX_BURST + 2 * SOCK_TX_BATCH;
	s->bufs = malloc((size_t)s->n_bufs * FG_PROTO_MAX_DATAGRAM);
	s->free_stack = malloc(sizeof(*s->free_stack) * s->n_bufs);
	if (!s->bufs || !s->free_stack) {
		*err = -ENOMEM;
		goto err;
	}
	for (uint32_t i = 0; i < s->n_bufs; i++)
		s->free_stack[i] = s->n_bufs - 1 - i;
	s->n_free = s->n_bufs;
	if (!(s->lo_ifindex = if_nametoindex("lo"))) {
		*err = errno ? -errno : -ENODEV; /* no loopback interface to check arrivals against */
		goto err;
	}
	if ((s->fd = open_socket(listen->ip, listen->port, one_of_several)) < 0) {
		*err = s->fd;
		goto err;
	}
	if (one_of_several && (s->backend_fd = open_socket(listen->ip, 0, false)) < 0) {
		*err = s->backend_fd;
		goto err;
	}
	s->tx[0].fd = s->fd;
	s->tx[1].fd = s->backend_fd >= 0 ? s->backend_fd : s->fd;
	return s;
err:
	fg_sock_io_free(s);
	return NULL;
}

void fg_sock_io_free(struct fg_sock_io *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	if (s->backend_fd >= 0)
		close(s->backend_fd);
	free(s->bufs);
	free(s->free_stack);
	free(s);
}
