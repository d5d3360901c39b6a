/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests: the kernel-socket I/O mode's send path — a datagram the kernel
 * refuses is counted as dropped (never as sent), and the rest of the batch
 * still goes out.  Loopback only; the refused datagram never leaves. */
#include <arpa/inet.h>
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

TEST_MAIN
