/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests: the kernel-socket I/O mode — a datagram the kernel refuses is
 * counted as dropped (never as sent) and the rest of the batch still goes
 * out; the lanes of several workers share the listen port and each has its
 * own backend side.  Loopback only; the refused datagram never leaves. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sock_io.h"
#include "test.h"

TEST(refused_sends_are_counted_and_the_batch_goes_on)
{
	struct fg_endpoint listen = { .ip = htonl(INADDR_LOOPBACK), .port = 0 };
	int err = 0;
	struct fg_sock_io *s = fg_sock_io_create(&listen, 64, false, &err);
	CHECK(s != NULL);
	if (!s)
		return;
	struct fg_io io = fg_sock_io_as_io(s);
	int peer = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	CHECK(peer >= 0 && bind(peer, (struct sockaddr *)&a, sizeof(a)) == 0);
	getsockname(peer, (struct sockaddr *)&a, &alen);

	/* To port 0 (the kernel refuses it: EINVAL), then to the peer. */
	for (int i = 0; i < 2; i++) {
		struct fg_pkt p;
		CHECK_EQ(io.ops->alloc(io.ctx, &p), 0);
		memcpy(p.data, "hello", 5);
		p.len = 5;
		p.peer = (struct fg_endpoint){ .ip = htonl(INADDR_LOOPBACK), .port = i ? a.sin_port : 0 };
		p.answer = !i;
		io.ops->tx(io.ctx, &p);
	}
	unsigned answers = 0;
	CHECK_EQ(io.ops->flush(io.ctx, &answers), 1);
	CHECK_EQ(answers, 1); /* the refused one was an answer */
	struct pollfd pfd = { .fd = peer, .events = POLLIN };
	CHECK_EQ(poll(&pfd, 1, 1000), 1);
	char buf[16];
	CHECK_EQ(recv(peer, buf, sizeof(buf), MSG_DONTWAIT), 5);
	CHECK_EQ(io.ops->in_use(io.ctx), 0); /* both buffers came back */
	close(peer);
	fg_sock_io_free(s);
}

/* Send one datagram of 5 bytes through the lane to 127.0.0.1:port. */
static void send_via(struct fg_io io, uint16_t port, bool answer)
{
	struct fg_pkt p;
	CHECK_EQ(io.ops->alloc(io.ctx, &p), 0);
	memcpy(p.data, "hello", 5);
	p.len = 5;
	p.peer = (struct fg_endpoint){ .ip = htonl(INADDR_LOOPBACK), .port = port };
	p.answer = answer;
	io.ops->tx(io.ctx, &p);
	unsigned answers = 0;
	CHECK_EQ(io.ops->flush(io.ctx, &answers), 0);
}

/* The source port of the next datagram at fd (0 when none comes in 1 s). */
static uint16_t source_port(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct sockaddr_in from;
	socklen_t len = sizeof(from);
	char buf[16];
	if (poll(&pfd, 1, 1000) != 1 || recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &len) != 5)
		return 0;
	return from.sin_port;
}

/* Several lanes share the listen port (SO_REUSEPORT), once the port is
 * claimed; each sends requests to backends from a port of its own and
 * receives their answers there, while answers to clients leave from the
 * listen port. */
TEST(lanes_of_several_workers)
{
	int peer = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	CHECK(peer >= 0 && bind(peer, (struct sockaddr *)&a, sizeof(a)) == 0);
	getsockname(peer, (struct sockaddr *)&a, &alen);
	/* A port held by a plain socket cannot be claimed. */
	struct fg_endpoint held = { .ip = htonl(INADDR_LOOPBACK), .port = a.sin_port };
	CHECK_EQ(fg_sock_io_claim_port(&held), -EADDRINUSE);

	/* A free port: claimed, released, then shared by two lanes. */
	int probe = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in l = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t llen = sizeof(l);
	CHECK(probe >= 0 && bind(probe, (struct sockaddr *)&l, sizeof(l)) == 0);
	getsockname(probe, (struct sockaddr *)&l, &llen);
	close(probe);
	struct fg_endpoint listen = { .ip = htonl(INADDR_LOOPBACK), .port = l.sin_port };
	CHECK_EQ(fg_sock_io_claim_port(&listen), 0);
	int err = 0;
	struct fg_sock_io *s0 = fg_sock_io_create(&listen, 64, true, &err);
	struct fg_sock_io *s1 = fg_sock_io_create(&listen, 64, true, &err);
	CHECK(s0 && s1);
	CHECK_EQ(fg_sock_io_claim_port(&listen), -EADDRINUSE); /* a second daemon would fail */
	if (!s0 || !s1)
		goto out;
	struct fg_io io = fg_sock_io_as_io(s0);

	send_via(io, a.sin_port, true); /* an answer to a client: from the listen port */
	CHECK_EQ(source_port(peer), listen.port);
	send_via(io, a.sin_port, false); /* a request to a backend: from the lane's own port */
	uint16_t backend_side = source_port(peer);
	CHECK(backend_side != 0 && backend_side != listen.port);

	/* The backend answers the source: lane 0 receives it, with its peer. */
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = backend_side };
	CHECK_EQ(sendto(peer, "world", 5, 0, (struct sockaddr *)&to, sizeof(to)), 5);
	struct fg_pkt got[4];
	unsigned n = 0;
	for (int i = 0; i < 100 && !n; i++) {
		io.ops->wait(io.ctx, 10000000ull);
		n = io.ops->rx(io.ctx, got, 4);
	}
	CHECK_EQ(n, 1);
	if (n == 1) {
		CHECK(!memcmp(got[0].data, "world", 5) && got[0].len == 5);
		CHECK_EQ(got[0].peer.port, a.sin_port);
		io.ops->free(io.ctx, &got[0]);
	}
	CHECK_EQ(io.ops->in_use(io.ctx), 0);
out:
	fg_sock_io_free(s0);
	fg_sock_io_free(s1);
	close(peer);
}

TEST_MAIN
