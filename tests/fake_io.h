/* SPDX-License-Identifier: Apache-2.0 */
/* fake_io — an in-memory struct fg_io for driving a worker in tests:
 * inject datagrams, collect what the worker sends, count buffers. */
#ifndef FG_FAKE_IO_H
#define FG_FAKE_IO_H

#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "proto.h"

#define FAKE_BUFS 4096
#define FAKE_MAX_SENT 65536

struct fake_sent {
	struct fg_endpoint to;
	uint32_t len;
	uint8_t data[256];
};

struct fake_io {
	uint8_t (*bufs)[FG_PROTO_MAX_DATAGRAM + 1];
	int used[FAKE_BUFS];
	long in_use;
	struct fg_pkt rxq[FAKE_BUFS];
	unsigned rx_head, rx_tail;
	struct fake_sent *sent;
	unsigned n_sent;
	int fail_alloc;
	int fail_tx;                      /* tx refuses every datagram */
	unsigned refused, answers_refused; /* since the last flush */
};

static int fake_alloc(void *ctx, struct fg_pkt *p)
{
	struct fake_io *f = ctx;
	if (f->fail_alloc)
		return -1;
	for (int i = 0; i < FAKE_BUFS; i++)
		if (!f->used[i]) {
			f->used[i] = 1;
			f->in_use++;
			p->handle = p->data = f->bufs[i];
			p->len = 0;
			p->cap = FG_PROTO_MAX_DATAGRAM;
			return 0;
		}
	return -1;
}

static void fake_free(void *ctx, struct fg_pkt *p)
{
	struct fake_io *f = ctx;
	long i = ((uint8_t(*)[FG_PROTO_MAX_DATAGRAM + 1])p->handle) - f->bufs;
	if (!f->used[i])
		abort(); /* double free: the test must fail loudly */
	f->used[i] = 0;
	f->in_use--;
	p->handle = NULL;
}

static unsigned fake_rx(void *ctx, struct fg_pkt *pkts, unsigned max)
{
	struct fake_io *f = ctx;
	unsigned n = 0;
	while (n < max && f->rx_head != f->rx_tail)
		pkts[n++] = f->rxq[f->rx_head++ % FAKE_BUFS];
	return n;
}

static void fake_tx(void *ctx, struct fg_pkt *p)
{
	struct fake_io *f = ctx;
	if (f->fail_tx) { /* the "kernel" refuses it: dropped, reported at flush */
		f->refused++;
		f->answers_refused += p->answer;
		fake_free(ctx, p);
		return;
	}
	if (f->n_sent < FAKE_MAX_SENT) {
		struct fake_sent *s = &f->sent[f->n_sent++];
		s->to = p->peer;
		s->len = p->len;
		memcpy(s->data, p->data, p->len < sizeof(s->data) ? p->len : sizeof(s->data));
	}
	fake_free(ctx, p);
}

static unsigned fake_flush(void *ctx, unsigned *answers_dropped)
{
	struct fake_io *f = ctx;
	*answers_dropped = f->answers_refused;
	unsigned n = f->refused;
	f->refused = f->answers_refused = 0;
	return n;
}
static uint64_t fake_in_use(void *ctx) { return (uint64_t)((struct fake_io *)ctx)->in_use; }

static const struct fg_io_ops fake_ops = {
	.rx = fake_rx, .tx = fake_tx, .flush = fake_flush, .alloc = fake_alloc, .free = fake_free,
	.in_use = fake_in_use,
};

static inline void fake_init(struct fake_io *f)
{
	memset(f, 0, sizeof(*f));
	f->bufs = calloc(FAKE_BUFS, sizeof(*f->bufs));
	f->sent = calloc(FAKE_MAX_SENT, sizeof(*f->sent));
}

static inline void fake_fini(struct fake_io *f)
{
	free(f->bufs);
	free(f->sent);
}

/* Queue a datagram as if received from `from`. */
static inline void fake_inject(struct fake_io *f, const void *data, size_t len, struct fg_endpoint from)
{
	struct fg_pkt p = { .handle = NULL };
	if (fake_alloc(f, &p))
		abort();
	memcpy(p.data, data, len);
	p.len = (uint32_t)len;
	p.peer = from;
	f->rxq[f->rx_tail++ % FAKE_BUFS] = p;
}

#endif
