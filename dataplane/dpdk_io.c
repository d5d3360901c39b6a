/* SPDX-License-Identifier: Apache-2.0 */
/* dpdk_io — DPDK port I/O; see dpdk_io.h. */
#include "dpdk_io.h"
#include "worker.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_prefetch.h>

#include "clock.h"
#include "defs.h"
#include "netpkt.h"

#define DPDK_RING_DESC 1024u
#define DPDK_TX_BATCH 64u
#define DPDK_MBUF_CACHE 256u
_Static_assert(sizeof(struct rte_mbuf) + FG_DPDK_MBUF_PRIV + RTE_MBUF_DEFAULT_BUF_SIZE <= FG_PKT_MAX_SPAN,
	       "an mbuf's data fits a request slot's offsets");
#define DPDK_ARP_RETRY_NS (100 * FG_NS_PER_MS) /* asking again for an unresolved backend */

#define DPDK_ARP_REPLIES_PER_WINDOW 64u /* ARP replies a lane sends per DPDK_ARP_RETRY_NS, at most */

/* A backend's address as ARP taught it: the MAC in the low 48 bits, bit 48
 * set once known.  One word, so any lane may learn it while others read.
 * Against poisoning, a MAC is learned once: only while the address is
 * unresolved (`asking`, from the start until the first answer), and only
 * from ARP about fairgate — the unicast reply to its request, or the
 * backend's own request for fairgate's address.  Gratuitous ARP, ARP about
 * other hosts and anything once the address is known teach nothing (a frame
 * claiming another MAC is counted); a known MAC is never asked for again, so
 * there is no window to race after start-up.  A backend whose MAC changes
 * needs a restart, or a static MAC (`@MAC`, security.md). */
#define ARP_KNOWN (1ull << 48)

struct arp_entry {
	uint32_t ip;
	uint32_t asking;
	uint64_t mac_known;
};

/* What one worker uses of the port: its RX queue (if the port has one for
 * it), its own TX queue and batch.  Written by that worker only. */
struct fg_dpdk_lane {
	struct fg_dpdk_io *d;
	uint16_t rxq, txq;
	bool has_rx;
	uint16_t ip_id;
	uint16_t backend_port;  /* its requests' source port (network order): their answers come back to it */
	struct rte_mbuf *tx[DPDK_TX_BATCH];
	uint8_t tx_answer[DPDK_TX_BATCH];   /* the frame is an answer to a client */
	unsigned tx_n;
	uint64_t next_arp_ns;
	uint64_t dropped_other, dropped_bad, dropped_no_arp;
	uint64_t dropped_martians;   /* to us from a martian source or a group MAC; the control thread reads */
	uint64_t dropped_arp; /* ARP about a backend not learned from; ARP requests not answered */
	uint64_t arp_window_tsc;
	unsigned arp_replies; /* in the window that started at arp_window_tsc */
	unsigned tx_dropped, tx_answers_dropped; /* since the last flush */
} __attribute__((aligned(FG_CACHE_LINE)));

struct fg_dpdk_io {
	uint16_t port;
	struct rte_mempool *pool;
	uint8_t mac[6];
	uint32_t ip;    /* fairgate's address, network order */
	uint16_t udp_port;
	struct arp_entry arp[FG_MAX_BACKENDS];
	unsigned n_arp;
	unsigned n_lanes, n_rxq;
	struct fg_dpdk_lane *lanes;
	int eal_ready, port_started;
	/* Several lanes: lane i sends to backends from port backend_port_base + i
	 * (host order; 0 with one lane: the listen port), and answers to it are
	 * steered to lane i's RX queue by an rte_flow rule where the port takes
	 * one (flows[i]), else passed between workers in software. */
	uint16_t backend_port_base;
	struct rte_flow *flows[FG_MAX_WORKER_CORES];
	char steering[256];
};

/* A UDP port of fairgate's on this address: the listen port (clients), or
 * a lane's backend-side port (*backend_side: answers only). */
static inline bool own_port(const struct fg_dpdk_io *d, uint16_t port, uint8_t *backend_side)
{
	*backend_side = port != d->udp_port;
	return !*backend_side ||
	       (d->backend_port_base && (uint16_t)(rte_be_to_cpu_16(port) - d->backend_port_base) < d->n_lanes);
}

/* Any lane reads the table while lane 0 adds to it (backends added live,
 * dio_follow_backends): an entry is written before the count that shows it
 * (release/acquire), and an entry taken over for another address loses its
 * MAC before it gets the new address. */
static struct arp_entry *arp_find(struct fg_dpdk_io *d, uint32_t ip)
{
	unsigned n = __atomic_load_n(&d->n_arp, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < n; i++)
		if (__atomic_load_n(&d->arp[i].ip, __ATOMIC_ACQUIRE) == ip)
			return &d->arp[i];
	return NULL;
}

/* Whether ip is a listed backend's that needs ARP (not removed, no static MAC). */
static bool arp_needed(const struct fg_backend_cfg *b, uint32_t n, uint32_t ip)
{
	for (uint32_t i = 0; i < n; i++)
		if (b[i].ep.ip == ip && !b[i].static_mac && b[i].admin != FG_BACKEND_REMOVED)
			return true;
	return false;
}

static void queue_tx(struct fg_dpdk_lane *l, struct rte_mbuf *m, bool answer);
static const uint8_t zero_mac[6];

static void send_arp(struct fg_dpdk_lane *l, uint16_t op, const uint8_t tha[6], uint32_t tpa)
{
	struct fg_dpdk_io *d = l->d;
	struct rte_mbuf *m = rte_pktmbuf_alloc(d->pool);
	if (!m)
		return;
	uint8_t *f = (uint8_t *)rte_pktmbuf_append(m, 60); /* minimum Ethernet frame */
	memset(f, 0, 60);
	fg_net_build_arp(f, op, d->mac, d->ip, tha, tpa);
	queue_tx(l, m, false);
}

static void handle_arp(struct fg_dpdk_lane *l, const struct fg_net_frame *f)
{
	struct fg_dpdk_io *d = l->d;
	struct arp_entry *e = arp_find(d, f->arp_spa);
	/* Learn only backends' addresses, only about fairgate, and only while
	 * asking: the unicast reply to our question, or the backend's own
	 * request for our address (it resolves us first, e.g. at start). */
	bool about_us = f->arp_tpa == d->ip &&
			(f->arp_op == FG_NET_ARP_REQUEST || (f->arp_op == FG_NET_ARP_REPLY && !memcmp(f->dst_mac, d->mac, 6)));
	if (e && about_us && __atomic_exchange_n(&e->asking, 0, __ATOMIC_RELAXED)) {
		uint64_t v = ARP_KNOWN;
		for (int i = 0; i < 6; i++)
			v |= (uint64_t)f->arp_sha[i] << (8 * i);
		__atomic_store_n(&e->mac_known, v, __ATOMIC_RELAXED);
	} else if (e) {
		l->dropped_arp++;
	}
	/* Answer who asks for fairgate's address: a unicast sender only (a
	 * reply to a broadcast or multicast "sender" would be a reflection),
	 * and a bounded number per window (an ARP flood costs one lane that
	 * much, not a reply each). */
	if (f->arp_op == FG_NET_ARP_REQUEST && f->arp_tpa == d->ip && !(f->arp_sha[0] & 1) &&
	    memcmp(f->arp_sha, zero_mac, 6)) {
		uint64_t now = rte_get_tsc_cycles();
		if (now - l->arp_window_tsc > rte_get_tsc_hz() / (FG_NS_PER_SEC / DPDK_ARP_RETRY_NS)) {
			l->arp_window_tsc = now;
			l->arp_replies = 0;
		}
		if (l->arp_replies++ < DPDK_ARP_REPLIES_PER_WINDOW)
			send_arp(l, FG_NET_ARP_REPLY, f->arp_sha, f->arp_spa);
		else
			l->dropped_arp++;
	}
}

void fg_dpdk_prefetch_burst(struct rte_mbuf *const *ms, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		rte_prefetch0(ms[i]);
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *data = rte_pktmbuf_mtod(ms[i], const uint8_t *);
		unsigned len = ms[i]->data_len < FG_DPDK_PREFETCH_BYTES ? ms[i]->data_len : FG_DPDK_PREFETCH_BYTES;
		for (unsigned off = 0; off < len; off += RTE_CACHE_LINE_SIZE)
			rte_prefetch0(data + off);
	}
}

static unsigned dio_rx(void *ctx, struct fg_pkt *pkts, unsigned max)
{
	struct fg_dpdk_lane *l = ctx;
	struct fg_dpdk_io *d = l->d;
	if (!l->has_rx)
		return 0; /* a port with fewer RX queues than workers: another lane receives */
	struct rte_mbuf *ms[FG_RX_BURST];
	if (max > FG_RX_BURST)
		max = FG_RX_BURST;
	unsigned n = rte_eth_rx_burst(d->port, l->rxq, ms, (uint16_t)max), out = 0;
	fg_dpdk_prefetch_burst(ms, n);
	for (unsigned i = 0; i < n; i++) {
		struct rte_mbuf *m = ms[i];
		struct fg_net_frame f;
		/* Multi-segment frames are larger than any request we accept. */
		enum fg_net_kind k = m->nb_segs == 1 ? fg_net_parse(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, &f)
						      : FG_NET_BAD;
		uint8_t backend_side = 0;
		if (k == FG_NET_ARP) {
			handle_arp(l, &f);
			rte_pktmbuf_free(m);
		} else if (k == FG_NET_UDP && f.dst_ip == d->ip && own_port(d, f.dst_port, &backend_side) &&
			   !fg_ip_is_martian_source(f.src_ip) && f.src_ip != d->ip && !(f.src_mac[0] & 1)) {
			/* (a group source MAC is as martian as a loopback source IP:
			 * the answer would go to every host on the segment) */
			struct fg_pkt *p = &pkts[out++];
			p->handle = m;
			p->data = rte_pktmbuf_mtod_offset(m, uint8_t *, f.payload_off);
			p->len = f.payload_len;
			p->cap = f.payload_len + rte_pktmbuf_tailroom(m) + (m->data_len - f.payload_off - f.payload_len);
			p->peer.ip = f.src_ip;
			p->peer.port = f.src_port;
			memcpy(p->peer.mac, f.src_mac, 6);
			p->backend_side = backend_side;
		} else {
			if (k == FG_NET_BAD || k == FG_NET_FRAGMENT)
				l->dropped_bad++;
			else if (k == FG_NET_UDP && f.dst_ip == d->ip && own_port(d, f.dst_port, &backend_side))
				__atomic_store_n(&l->dropped_martians, l->dropped_martians + 1, __ATOMIC_RELAXED);
			else
				l->dropped_other++;
			rte_pktmbuf_free(m);
		}
	}
	return out;
}

/* Send the TX batch; what the ring will not take is freed and counted. */
static void tx_burst(struct fg_dpdk_lane *l)
{
	unsigned sent = 0;
	/* A few retries absorb a momentarily full TX ring; the rest is counted. */
	for (int tries = 0; sent < l->tx_n && tries < 8; tries++)
		sent += rte_eth_tx_burst(l->d->port, l->txq, l->tx + sent, (uint16_t)(l->tx_n - sent));
	for (unsigned i = sent; i < l->tx_n; i++) {
		l->tx_dropped++;
		l->tx_answers_dropped += l->tx_answer[i];
		rte_pktmbuf_free(l->tx[i]);
	}
	l->tx_n = 0;
}

static unsigned dio_flush(void *ctx, unsigned *answers_dropped)
{
	struct fg_dpdk_lane *l = ctx;
	tx_burst(l);
	unsigned dropped = l->tx_dropped;
	*answers_dropped = l->tx_answers_dropped;
	l->tx_dropped = l->tx_answers_dropped = 0;
	return dropped;
}

static void queue_tx(struct fg_dpdk_lane *l, struct rte_mbuf *m, bool answer)
{
	if (l->tx_n == DPDK_TX_BATCH)
		tx_burst(l);
	l->tx_answer[l->tx_n] = answer;
	l->tx[l->tx_n++] = m;
}


static void dio_tx(void *ctx, struct fg_pkt *p)
{
	struct fg_dpdk_lane *l = ctx;
	struct fg_dpdk_io *d = l->d;
	struct rte_mbuf *m = p->handle;
	p->handle = NULL;
	const uint8_t *dst = p->peer.mac;
	uint8_t learned[6];
	if (!memcmp(dst, zero_mac, 6)) {
		struct arp_entry *e = arp_find(d, p->peer.ip);
		uint64_t v = e ? __atomic_load_n(&e->mac_known, __ATOMIC_RELAXED) : 0;
		if (!(v & ARP_KNOWN)) {
			/* Unresolved backend: the request will time out and be answered;
			 * the send failed (flush reports it). */
			l->dropped_no_arp++;
			l->tx_dropped++;
			rte_pktmbuf_free(m);
			return;
		}
		for (int i = 0; i < 6; i++)
			learned[i] = (uint8_t)(v >> (8 * i));
		dst = learned;
	}
	uint8_t *hdr = p->data - FG_NET_HDRS_LEN;
	m->data_off = (uint16_t)(hdr - (uint8_t *)m->buf_addr);
	m->data_len = (uint16_t)(FG_NET_HDRS_LEN + p->len);
	m->pkt_len = m->data_len;
	fg_net_build_udp(hdr, d->mac, dst, d->ip, p->peer.ip, p->answer ? d->udp_port : l->backend_port, p->peer.port,
			 (uint16_t)p->len, l->ip_id++);
	queue_tx(l, m, p->answer);
}

static int dio_alloc(void *ctx, struct fg_pkt *p)
{
	struct fg_dpdk_lane *l = ctx;
	struct rte_mbuf *m = rte_pktmbuf_alloc(l->d->pool);
	if (!m)
		return -ENOBUFS;
	p->handle = m;
	p->data = rte_pktmbuf_mtod_offset(m, uint8_t *, FG_NET_HDRS_LEN);
	p->len = 0;
	p->cap = rte_pktmbuf_tailroom(m) - FG_NET_HDRS_LEN;
	return 0;
}

static void dio_free(void *ctx, struct fg_pkt *p)
{
	(void)ctx;
	rte_pktmbuf_free(p->handle);
	p->handle = NULL;
}

/* Backends added live are asked for like those of the start (lane 0 only:
 * the one writer of the table).  A full table gives up the entry of an
 * address no backend needs any more: removed backends get no requests. */
static void dio_follow_backends(void *ctx, const struct fg_backend_cfg *b, uint32_t n)
{
	struct fg_dpdk_lane *l = ctx;
	struct fg_dpdk_io *d = l->d;
	if (l != &d->lanes[0])
		return;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t ip = b[i].ep.ip;
		if (!arp_needed(b, n, ip) || arp_find(d, ip))
			continue;
		struct arp_entry *e = NULL;
		if (d->n_arp < FG_MAX_BACKENDS) {
			e = &d->arp[d->n_arp];
			*e = (struct arp_entry){ .ip = ip, .asking = 1 };
			__atomic_store_n(&d->n_arp, d->n_arp + 1, __ATOMIC_RELEASE);
			continue;
		}
		/* A resolved entry first: no lane learns into it any more (handle_arp). */
		for (int pass = 0; pass < 2 && !e; pass++)
			for (unsigned k = 0; k < d->n_arp && !e; k++)
				if (!arp_needed(b, n, d->arp[k].ip) &&
				    (pass || (__atomic_load_n(&d->arp[k].mac_known, __ATOMIC_RELAXED) & ARP_KNOWN)))
					e = &d->arp[k];
		if (!e) /* at most FG_MAX_BACKENDS addresses are needed: defensive */
			continue;
		__atomic_store_n(&e->asking, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&e->mac_known, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&e->ip, ip, __ATOMIC_RELEASE);
		__atomic_store_n(&e->asking, 1, __ATOMIC_RELAXED);
	}
	l->next_arp_ns = 0; /* ask now */
}

int fg_dpdk_io_backend_mac(const void *dio, uint32_t ip, uint8_t mac[6])
{
	struct fg_dpdk_io *d = (struct fg_dpdk_io *)dio;
	const struct arp_entry *e = arp_find(d, ip);
	if (!e)
		return -1;
	uint64_t v = __atomic_load_n(&e->mac_known, __ATOMIC_RELAXED);
	if (!(v & ARP_KNOWN))
		return 0;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)(v >> (8 * i));
	return 1;
}

/* ARP requests for unresolved backends: lane 0 asks for everyone. */
static void dio_tick(void *ctx, uint64_t now)
{
	struct fg_dpdk_lane *l = ctx;
	struct fg_dpdk_io *d = l->d;
	if (l != &d->lanes[0] || now < l->next_arp_ns)
		return;
	l->next_arp_ns = now + DPDK_ARP_RETRY_NS;
	for (unsigned i = 0; i < d->n_arp; i++)
		if (__atomic_load_n(&d->arp[i].asking, __ATOMIC_RELAXED)) /* unresolved */
			send_arp(l, FG_NET_ARP_REQUEST, zero_mac, d->arp[i].ip);
}

/* The pool is shared by the lanes: the count is the port's. */
static uint64_t dio_in_use(void *ctx)
{
	struct fg_dpdk_lane *l = ctx;
	return rte_mempool_in_use_count(l->d->pool);
}

static uint64_t dio_pool_size(void *ctx)
{
	return ((struct fg_dpdk_lane *)ctx)->d->pool->size;
}

static uint64_t dio_martians(void *ctx)
{
	const struct fg_dpdk_io *d = ((struct fg_dpdk_lane *)ctx)->d;
	uint64_t n = 0;
	for (unsigned i = 0; i < d->n_lanes; i++)
		n += __atomic_load_n(&d->lanes[i].dropped_martians, __ATOMIC_RELAXED);
	return n;
}

static const struct fg_io_ops dpdk_ops = {
	.rx = dio_rx, .tx = dio_tx, .flush = dio_flush, .alloc = dio_alloc, .free = dio_free,
	.wait = NULL, .tick = dio_tick, .in_use = dio_in_use, .pool_size = dio_pool_size, .martians = dio_martians,
	.follow_backends = dio_follow_backends, .max_datagram = FG_NET_MAX_PAYLOAD,
};

struct fg_io fg_dpdk_io_as_io(struct fg_dpdk_io *d) { return fg_dpdk_io_lane(d, 0); }

struct fg_io fg_dpdk_io_lane(struct fg_dpdk_io *d, unsigned lane) { return (struct fg_io){ &dpdk_ops, &d->lanes[lane] }; }

unsigned fg_dpdk_io_rx_queues(const struct fg_dpdk_io *d) { return d->n_rxq; }

/* EAL's runtime directory, to remove once empty.  DPDK's telemetry removes
 * its socket there from an atexit handler, after rte_eal_cleanup: the
 * directory empties only then, so a destructor (run after the atexit
 * handlers registered while the program ran) takes it. */
static char eal_runtime_dir[PATH_MAX];

__attribute__((destructor)) static void remove_runtime_dir(void)
{
	if (*eal_runtime_dir)
		rmdir(eal_runtime_dir); /* only when empty: a directory someone else still uses stays */
}

void fg_dpdk_eal_cleanup(bool initialized)
{
	snprintf(eal_runtime_dir, sizeof(eal_runtime_dir), "%s", rte_eal_get_runtime_dir()); /* "" until EAL made it */
	if (initialized)
		rte_eal_cleanup();
	remove_runtime_dir(); /* now, if nothing is left in it (no telemetry) */
}

struct fg_dpdk_io *fg_dpdk_io_create(int eal_argc, char **eal_argv, const struct fg_settings *s,
				     uint32_t n_buffers, unsigned n_lanes, char *errbuf, size_t errlen)
{
	if (rte_eal_init(eal_argc, eal_argv) < 0) {
		snprintf(errbuf, errlen, "EAL initialisation failed: %s", rte_strerror(rte_errno));
		fg_dpdk_eal_cleanup(false);
		return NULL;
	}
	if (rte_eth_dev_count_avail() == 0) {
		snprintf(errbuf, errlen, "no Ethernet port; give one with --vdev (e.g. net_tap0) or a NIC");
		fg_dpdk_eal_cleanup(true);
		return NULL;
	}
	uint16_t port = 0;
	RTE_ETH_FOREACH_DEV(port) break;
	struct fg_dpdk_io *d = fg_dpdk_io_attach(port, s, n_buffers, n_lanes, errbuf, errlen);
	if (d)
		d->eal_ready = 1;
	else
		fg_dpdk_eal_cleanup(true);
	return d;
}

/* One rule: UDP to fairgate's address and `port` goes to RX queue `queue`. */
static struct rte_flow *steer_port(uint16_t eth_port, uint32_t ip, uint16_t port, uint16_t queue,
				   struct rte_flow_error *err)
{
	const struct rte_flow_attr attr = { .ingress = 1 };
	const struct rte_flow_item_ipv4 ip_spec = { .hdr.dst_addr = ip }, ip_mask = { .hdr.dst_addr = UINT32_MAX };
	const struct rte_flow_item_udp udp_spec = { .hdr.dst_port = port }, udp_mask = { .hdr.dst_port = UINT16_MAX };
	const struct rte_flow_item pattern[] = {
		{ .type = RTE_FLOW_ITEM_TYPE_ETH },
		{ .type = RTE_FLOW_ITEM_TYPE_IPV4, .spec = &ip_spec, .mask = &ip_mask },
		{ .type = RTE_FLOW_ITEM_TYPE_UDP, .spec = &udp_spec, .mask = &udp_mask },
		{ .type = RTE_FLOW_ITEM_TYPE_END },
	};
	const struct rte_flow_action_queue to = { .index = queue };
	const struct rte_flow_action actions[] = {
		{ .type = RTE_FLOW_ACTION_TYPE_QUEUE, .conf = &to },
		{ .type = RTE_FLOW_ACTION_TYPE_END },
	};
	return rte_flow_create(eth_port, &attr, pattern, actions, err);
}

/* Several lanes: steer the answers to each lane's backend-side port to its
 * RX queue with an rte_flow rule per lane, where the port takes them; where
 * it does not (or it has fewer RX queues than lanes), the lane that
 * receives an answer passes it to its request's worker through the mesh.
 * d->steering says which, for the start-up log. */
static void steer_answers(struct fg_dpdk_io *d)
{
	if (d->n_lanes < 2) {
		snprintf(d->steering, sizeof(d->steering), "one worker: answers and requests on the listen port");
		return;
	}
	if (d->n_rxq < d->n_lanes) {
		snprintf(d->steering, sizeof(d->steering),
			 "forwarded between workers in software (the port has %u RX queue(s) for %u workers)", d->n_rxq,
			 d->n_lanes);
		return;
	}
	struct rte_flow_error err = { .message = NULL };
	unsigned i = 0;
	for (; i < d->n_lanes; i++)
		if (!(d->flows[i] = steer_port(d->port, d->ip, d->lanes[i].backend_port, d->lanes[i].rxq, &err)))
			break;
	if (i == d->n_lanes) {
		snprintf(d->steering, sizeof(d->steering),
			 "steered to their worker's RX queue by rte_flow (worker i's requests leave from port %u + i)",
			 d->backend_port_base);
		return;
	}
	while (i--) {
		rte_flow_destroy(d->port, d->flows[i], NULL);
		d->flows[i] = NULL;
	}
	snprintf(d->steering, sizeof(d->steering),
		 "forwarded between workers in software (rte_flow rules refused: %s; worker i's requests leave "
		 "from port %u + i)",
		 err.message ? err.message : rte_strerror(rte_errno), d->backend_port_base);
}

const char *fg_dpdk_io_steering(const struct fg_dpdk_io *d) { return d->steering; }

struct fg_dpdk_io *fg_dpdk_io_attach(uint16_t port, const struct fg_settings *s, uint32_t n_buffers, unsigned n_lanes,
				     char *errbuf, size_t errlen)
{
	struct fg_dpdk_io *d = calloc(1, sizeof(*d));
	if (!d || n_lanes == 0) {
		snprintf(errbuf, errlen, n_lanes ? "out of memory" : "no worker lane");
		free(d);
		return NULL;
	}
	d->port = port;
	d->n_lanes = n_lanes;
	d->lanes = aligned_alloc(FG_CACHE_LINE, sizeof(*d->lanes) * n_lanes);
	if (!d->lanes) {
		snprintf(errbuf, errlen, "out of memory");
		goto err;
	}
	memset(d->lanes, 0, sizeof(*d->lanes) * n_lanes);
	struct rte_eth_dev_info info;
	int rc = rte_eth_dev_info_get(d->port, &info);
	if (rc) {
		snprintf(errbuf, errlen, "port %u: no device information: %s", d->port, strerror(-rc));
		goto err;
	}
	if (info.max_tx_queues < n_lanes) {
		snprintf(errbuf, errlen, "port %u (%s) has %u TX queue(s); %u workers need one each", d->port,
			 info.driver_name, info.max_tx_queues, n_lanes);
		goto err;
	}
	/* One RX queue per worker where the device spreads flows over queues:
	 * RSS, a tap (the kernel picks a queue per flow) or a ring port (whoever
	 * fills the rings spreads them); otherwise worker 0 receives all, and
	 * since a request is queued where it arrives, does all the work. */
	uint64_t rss = info.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP);
	bool spreads = rss || !strcmp(info.driver_name, "net_tap") || !strcmp(info.driver_name, "net_ring");
	d->n_rxq = n_lanes > 1 && info.max_rx_queues >= n_lanes && spreads ? n_lanes : 1;
	/* Several lanes: each its own backend-side port, listen port + 1 + i. */
	uint32_t listen_port = rte_be_to_cpu_16(s->listen.port);
	if (n_lanes > 1 && listen_port + n_lanes > UINT16_MAX) {
		snprintf(errbuf, errlen, "listen port %u leaves no room for the %u workers' backend-side ports "
			 "(listen port + 1 .. listen port + %u)", listen_port, n_lanes, n_lanes);
		goto err;
	}
	d->backend_port_base = n_lanes > 1 ? (uint16_t)(listen_port + 1) : 0;
	for (unsigned i = 0; i < n_lanes; i++)
		d->lanes[i] = (struct fg_dpdk_lane){ .d = d, .rxq = (uint16_t)i, .txq = (uint16_t)i, .has_rx = i < d->n_rxq,
						     .backend_port = n_lanes > 1 ? rte_cpu_to_be_16((uint16_t)(d->backend_port_base + i))
										 : s->listen.port };
	/* Held packets + RX/TX descriptors + TX batches + per-lane caches +
	 * what the hand-off rings between lanes' workers can hold + each
	 * worker's reserve for the answers it owes. */
	unsigned n_mbufs = n_buffers * n_lanes + 2 * DPDK_RING_DESC * n_lanes + DPDK_TX_BATCH * n_lanes +
			   (n_lanes + 1) * DPDK_MBUF_CACHE + FG_ANSWER_RESERVE * n_lanes +
			   (n_lanes > 1 ? fg_handoff_ring_capacity(n_lanes) * n_lanes * (n_lanes - 1) : 0);
	char name[32];
	snprintf(name, sizeof(name), "fg_mbufs_%u", port);
	d->pool = rte_pktmbuf_pool_create(name, n_mbufs, DPDK_MBUF_CACHE, FG_DPDK_MBUF_PRIV, RTE_MBUF_DEFAULT_BUF_SIZE,
					  rte_eth_dev_socket_id(d->port));
	if (!d->pool) {
		snprintf(errbuf, errlen, "cannot create the mbuf pool (%u mbufs): %s", n_mbufs, rte_strerror(rte_errno));
		goto err;
	}
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof(conf));
	if (d->n_rxq > 1 && rss) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = rss;
	}
	uint16_t nrx = DPDK_RING_DESC, ntx = DPDK_RING_DESC;
	rc = rte_eth_dev_configure(d->port, (uint16_t)d->n_rxq, (uint16_t)n_lanes, &conf);
	if (!rc)
		rc = rte_eth_dev_adjust_nb_rx_tx_desc(d->port, &nrx, &ntx);
	for (unsigned q = 0; !rc && q < d->n_rxq; q++)
		rc = rte_eth_rx_queue_setup(d->port, (uint16_t)q, nrx, rte_eth_dev_socket_id(d->port), NULL, d->pool);
	for (unsigned q = 0; !rc && q < n_lanes; q++)
		rc = rte_eth_tx_queue_setup(d->port, (uint16_t)q, ntx, rte_eth_dev_socket_id(d->port), NULL);
	if (!rc)
		rc = rte_eth_dev_start(d->port);
	if (rc) {
		snprintf(errbuf, errlen, "port %u set-up failed: %s", d->port, strerror(-rc));
		goto err;
	}
	d->port_started = 1;
	struct rte_ether_addr mac;
	rte_eth_macaddr_get(d->port, &mac);
	memcpy(d->mac, mac.addr_bytes, 6);
	d->ip = s->listen.ip;
	d->udp_port = s->listen.port;
	steer_answers(d);
	for (uint32_t i = 0; i < s->n_backends; i++) {
		if (s->backends[i].static_mac || arp_find(d, s->backends[i].ep.ip))
			continue;
		d->arp[d->n_arp++] = (struct arp_entry){ .ip = s->backends[i].ep.ip, .asking = 1 };
	}
	return d;
err:
	fg_dpdk_io_free(d);
	return NULL;
}

void fg_dpdk_io_free(struct fg_dpdk_io *d)
{
	if (!d)
		return;
	if (d->port_started) {
		for (unsigned i = 0; i < d->n_lanes; i++)
			dio_flush(&d->lanes[i], &(unsigned){ 0 });
		for (unsigned i = 0; i < d->n_lanes; i++)
			if (d->flows[i])
				rte_flow_destroy(d->port, d->flows[i], NULL);
		rte_eth_dev_stop(d->port);
		rte_eth_dev_close(d->port);
	}
	if (d->pool)
		rte_mempool_free(d->pool);
	if (d->eal_ready)
		fg_dpdk_eal_cleanup(true);
	free(d->lanes);
	free(d);
}
