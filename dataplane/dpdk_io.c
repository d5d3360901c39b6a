/* dpdk_io — DPDK port I/O; see dpdk_io.h. */
#include "dpdk_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "clock.h"
#include "defs.h"
#include "netpkt.h"

#define DPDK_RING_DESC 1024u
#define DPDK_TX_BATCH 64u
#define DPDK_MBUF_CACHE 256u
#define DPDK_ARP_RETRY_NS FG_NS_PER_SEC

struct arp_entry {
	uint32_t ip;
	uint8_t mac[6];
	uint8_t known;
};

struct fg_dpdk_io {
	uint16_t port;
	struct rte_mempool *pool;
	uint8_t mac[6];
	uint32_t ip;    /* fairgate's address, network order */
	uint16_t udp_port;
	uint16_t ip_id;
	struct rte_mbuf *tx[DPDK_TX_BATCH];
	unsigned tx_n;
	struct arp_entry arp[FG_MAX_BACKENDS];
	unsigned n_arp;
	uint64_t next_arp_ns;
	uint64_t dropped_other, dropped_bad, dropped_no_arp;
	unsigned tx_dropped; /* since the last flush */
	int eal_ready, port_started;
};

static struct arp_entry *arp_find(struct fg_dpdk_io *d, uint32_t ip)
{
	for (unsigned i = 0; i < d->n_arp; i++)
		if (d->arp[i].ip == ip)
			return &d->arp[i];
	return NULL;
}

static void queue_tx(struct fg_dpdk_io *d, struct rte_mbuf *m);

static void send_arp(struct fg_dpdk_io *d, uint16_t op, const uint8_t tha[6], uint32_t tpa)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(d->pool);
	if (!m)
		return;
	uint8_t *f = (uint8_t *)rte_pktmbuf_append(m, 60); /* minimum Ethernet frame */
	memset(f, 0, 60);
	fg_net_build_arp(f, op, d->mac, d->ip, tha, tpa);
	queue_tx(d, m);
}

static void handle_arp(struct fg_dpdk_io *d, const struct fg_net_frame *f)
{
	struct arp_entry *e = arp_find(d, f->arp_spa);
	if (e) { /* learn only backends' addresses */
		memcpy(e->mac, f->arp_sha, 6);
		e->known = 1;
	}
	if (f->arp_op == FG_NET_ARP_REQUEST && f->arp_tpa == d->ip)
		send_arp(d, FG_NET_ARP_REPLY, f->arp_sha, f->arp_spa);
}

static unsigned dio_rx(void *ctx, struct fg_pkt *pkts, unsigned max)
{
	struct fg_dpdk_io *d = ctx;
	struct rte_mbuf *ms[FG_RX_BURST];
	if (max > FG_RX_BURST)
		max = FG_RX_BURST;
	unsigned n = rte_eth_rx_burst(d->port, 0, ms, (uint16_t)max), out = 0;
	for (unsigned i = 0; i < n; i++) {
		struct rte_mbuf *m = ms[i];
		struct fg_net_frame f;
		/* Multi-segment frames are larger than any request we accept. */
		enum fg_net_kind k = m->nb_segs == 1 ? fg_net_parse(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, &f)
						      : FG_NET_BAD;
		if (k == FG_NET_ARP) {
			handle_arp(d, &f);
			rte_pktmbuf_free(m);
		} else if (k == FG_NET_UDP && f.dst_ip == d->ip && f.dst_port == d->udp_port) {
			struct fg_pkt *p = &pkts[out++];
			p->handle = m;
			p->data = rte_pktmbuf_mtod_offset(m, uint8_t *, f.payload_off);
			p->len = f.payload_len;
			p->cap = f.payload_len + rte_pktmbuf_tailroom(m) + (m->data_len - f.payload_off - f.payload_len);
			p->peer.ip = f.src_ip;
			p->peer.port = f.src_port;
			memcpy(p->peer.mac, f.src_mac, 6);
		} else {
			if (k == FG_NET_BAD || k == FG_NET_FRAGMENT)
				d->dropped_bad++;
			else
				d->dropped_other++;
			rte_pktmbuf_free(m);
		}
	}
	return out;
}

/* Send the TX batch; what the ring will not take is freed and counted. */
static void tx_burst(struct fg_dpdk_io *d)
{
	unsigned sent = 0;
	/* A few retries absorb a momentarily full TX ring; the rest is counted. */
	for (int tries = 0; sent < d->tx_n && tries < 8; tries++)
		sent += rte_eth_tx_burst(d->port, 0, d->tx + sent, (uint16_t)(d->tx_n - sent));
	for (unsigned i = sent; i < d->tx_n; i++) {
		d->tx_dropped++;
		rte_pktmbuf_free(d->tx[i]);
	}
	d->tx_n = 0;
}

static unsigned dio_flush(void *ctx)
{
	struct fg_dpdk_io *d = ctx;
	tx_burst(d);
	unsigned dropped = d->tx_dropped;
	d->tx_dropped = 0;
	return dropped;
}

static void queue_tx(struct fg_dpdk_io *d, struct rte_mbuf *m)
{
	if (d->tx_n == DPDK_TX_BATCH)
		tx_burst(d);
	d->tx[d->tx_n++] = m;
}

static const uint8_t zero_mac[6];

static void dio_tx(void *ctx, struct fg_pkt *p)
{
	struct fg_dpdk_io *d = ctx;
	struct rte_mbuf *m = p->handle;
	p->handle = NULL;
	const uint8_t *dst = p->peer.mac;
	if (!memcmp(dst, zero_mac, 6)) {
		struct arp_entry *e = arp_find(d, p->peer.ip);
		if (!e || !e->known) {
			/* Unresolved backend: the request will time out and be answered. */
			d->dropped_no_arp++;
			rte_pktmbuf_free(m);
			return;
		}
		dst = e->mac;
	}
	uint8_t *hdr = p->data - FG_NET_HDRS_LEN;
	m->data_off = (uint16_t)(hdr - (uint8_t *)m->buf_addr);
	m->data_len = (uint16_t)(FG_NET_HDRS_LEN + p->len);
	m->pkt_len = m->data_len;
	fg_net_build_udp(hdr, d->mac, dst, d->ip, p->peer.ip, d->udp_port, p->peer.port, (uint16_t)p->len, d->ip_id++);
	queue_tx(d, m);
}

static int dio_alloc(void *ctx, struct fg_pkt *p)
{
	struct fg_dpdk_io *d = ctx;
	struct rte_mbuf *m = rte_pktmbuf_alloc(d->pool);
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

static void dio_tick(void *ctx, uint64_t now)
{
	struct fg_dpdk_io *d = ctx;
	if (now < d->next_arp_ns)
		return;
	d->next_arp_ns = now + DPDK_ARP_RETRY_NS;
	for (unsigned i = 0; i < d->n_arp; i++)
		if (!d->arp[i].known)
			send_arp(d, FG_NET_ARP_REQUEST, zero_mac, d->arp[i].ip);
}

static uint64_t dio_in_use(void *ctx)
{
	struct fg_dpdk_io *d = ctx;
	return rte_mempool_in_use_count(d->pool);
}

static const struct fg_io_ops dpdk_ops = {
	.rx = dio_rx, .tx = dio_tx, .flush = dio_flush, .alloc = dio_alloc, .free = dio_free,
	.wait = NULL, .tick = dio_tick, .in_use = dio_in_use,
};

struct fg_io fg_dpdk_io_as_io(struct fg_dpdk_io *d) { return (struct fg_io){ &dpdk_ops, d }; }

struct fg_dpdk_io *fg_dpdk_io_create(int eal_argc, char **eal_argv, const struct fg_settings *s,
				     uint32_t n_buffers, char *errbuf, size_t errlen)
{
	if (rte_eal_init(eal_argc, eal_argv) < 0) {
		snprintf(errbuf, errlen, "EAL initialisation failed: %s", rte_strerror(rte_errno));
		return NULL;
	}
	if (rte_eth_dev_count_avail() == 0) {
		snprintf(errbuf, errlen, "no Ethernet port; give one with --vdev (e.g. net_tap0) or a NIC");
		rte_eal_cleanup();
		return NULL;
	}
	uint16_t port = 0;
	RTE_ETH_FOREACH_DEV(port) break;
	struct fg_dpdk_io *d = fg_dpdk_io_attach(port, s, n_buffers, errbuf, errlen);
	if (d)
		d->eal_ready = 1;
	else
		rte_eal_cleanup();
	return d;
}

struct fg_dpdk_io *fg_dpdk_io_attach(uint16_t port, const struct fg_settings *s, uint32_t n_buffers, char *errbuf,
				     size_t errlen)
{
	struct fg_dpdk_io *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	d->port = port;
	/* Held packets + RX descriptors + TX batch + in-flight slack. */
	unsigned n_mbufs = n_buffers + 2 * DPDK_RING_DESC + DPDK_TX_BATCH + 2 * DPDK_MBUF_CACHE;
	char name[32];
	snprintf(name, sizeof(name), "fg_mbufs_%u", port);
	d->pool = rte_pktmbuf_pool_create(name, n_mbufs, DPDK_MBUF_CACHE, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					  rte_eth_dev_socket_id(d->port));
	if (!d->pool) {
		snprintf(errbuf, errlen, "cannot create the mbuf pool (%u mbufs): %s", n_mbufs, rte_strerror(rte_errno));
		goto err;
	}
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof(conf));
	uint16_t nrx = DPDK_RING_DESC, ntx = DPDK_RING_DESC;
	int rc = rte_eth_dev_configure(d->port, 1, 1, &conf);
	if (!rc)
		rc = rte_eth_dev_adjust_nb_rx_tx_desc(d->port, &nrx, &ntx);
	if (!rc)
		rc = rte_eth_rx_queue_setup(d->port, 0, nrx, rte_eth_dev_socket_id(d->port), NULL, d->pool);
	if (!rc)
		rc = rte_eth_tx_queue_setup(d->port, 0, ntx, rte_eth_dev_socket_id(d->port), NULL);
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
	for (uint32_t i = 0; i < s->n_backends; i++) {
		if (s->backends[i].static_mac || arp_find(d, s->backends[i].ep.ip))
			continue;
		d->arp[d->n_arp++] = (struct arp_entry){ .ip = s->backends[i].ep.ip };
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
		dio_flush(d);
		rte_eth_dev_stop(d->port);
		rte_eth_dev_close(d->port);
	}
	if (d->pool)
		rte_mempool_free(d->pool);
	if (d->eal_ready)
		rte_eal_cleanup();
	free(d);
}
