/* SPDX-License-Identifier: Apache-2.0 */
/* netpkt — Ethernet/IPv4/UDP/ARP on byte buffers; see netpkt.h. */
#include "netpkt.h"

#include <string.h>

#define ETHERTYPE_IPV4 0x0800u
#define ETHERTYPE_ARP 0x0806u
#define IPPROTO_UDP_ 17u

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t rd32_raw(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint16_t rd16_raw(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

/* The ones' complement sum, four bytes at a time in a 64-bit accumulator
 * (RFC 1071: the sum can be taken in memory order and swapped at the end;
 * IPv4 header lengths are multiples of 4, a trailing half word is added too). */
static uint16_t ip_checksum(const uint8_t *h, size_t len)
{
	uint64_t sum = 0;
	size_t i = 0;
	for (; i + 4 <= len; i += 4) {
		uint32_t w;
		memcpy(&w, h + i, 4);
		sum += w;
	}
	if (i + 2 <= len) {
		uint16_t w;
		memcpy(&w, h + i, 2);
		sum += w;
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	uint16_t c = (uint16_t)~sum; /* in memory order; callers want the big-endian value */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	c = (uint16_t)(c >> 8 | c << 8);
#endif
	return c;
}

static enum fg_net_kind parse_arp(const uint8_t *p, size_t len, struct fg_net_frame *f)
{
	/* Ethernet/IPv4 ARP only: htype 1, ptype 0x0800, hlen 6, plen 4. */
	if (len < 28)
		return f->kind = FG_NET_BAD;
	if (rd16(p) != 1 || rd16(p + 2) != ETHERTYPE_IPV4 || p[4] != 6 || p[5] != 4)
		return f->kind = FG_NET_OTHER;
	f->arp_op = rd16(p + 6);
	memcpy(f->arp_sha, p + 8, 6);
	f->arp_spa = rd32_raw(p + 14);
	f->arp_tpa = rd32_raw(p + 24);
	return f->kind = FG_NET_ARP;
}

static enum fg_net_kind parse_ipv4(const uint8_t *p, size_t len, size_t base, struct fg_net_frame *f)
{
	if (len < FG_NET_IP_LEN || (p[0] >> 4) != 4)
		return f->kind = FG_NET_BAD;
	size_t ihl = (size_t)(p[0] & 0x0f) * 4;
	size_t total = rd16(p + 2);
	if (ihl < FG_NET_IP_LEN || total < ihl || total > len || ip_checksum(p, ihl) != 0)
		return f->kind = FG_NET_BAD;
	if (rd16(p + 6) & 0x3fff) /* MF flag or a fragment offset */
		return f->kind = FG_NET_FRAGMENT;
	if (p[9] != IPPROTO_UDP_)
		return f->kind = FG_NET_OTHER;
	f->src_ip = rd32_raw(p + 12);
	f->dst_ip = rd32_raw(p + 16);
	const uint8_t *u = p + ihl;
	size_t ulen_avail = total - ihl;
	if (ulen_avail < FG_NET_UDP_LEN)
		return f->kind = FG_NET_BAD;
	size_t ulen = rd16(u + 4);
	if (ulen < FG_NET_UDP_LEN || ulen > ulen_avail)
		return f->kind = FG_NET_BAD;
	f->src_port = rd16_raw(u);
	f->dst_port = rd16_raw(u + 2);
	f->payload_off = (uint32_t)(base + ihl + FG_NET_UDP_LEN);
	f->payload_len = (uint32_t)(ulen - FG_NET_UDP_LEN);
	return f->kind = FG_NET_UDP;
}

enum fg_net_kind fg_net_parse(const uint8_t *frame, size_t len, struct fg_net_frame *f)
{
	memset(f, 0, sizeof(*f));
	if (len < FG_NET_ETH_LEN)
		return f->kind = FG_NET_BAD;
	memcpy(f->dst_mac, frame, 6);
	memcpy(f->src_mac, frame + 6, 6);
	uint16_t type = rd16(frame + 12);
	if (type == ETHERTYPE_ARP)
		return parse_arp(frame + FG_NET_ETH_LEN, len - FG_NET_ETH_LEN, f);
	if (type == ETHERTYPE_IPV4)
		return parse_ipv4(frame + FG_NET_ETH_LEN, len - FG_NET_ETH_LEN, FG_NET_ETH_LEN, f);
	return f->kind = FG_NET_OTHER;
}

void fg_net_build_udp(uint8_t *h, const uint8_t src_mac[6], const uint8_t dst_mac[6], uint32_t src_ip,
		      uint32_t dst_ip, uint16_t src_port, uint16_t dst_port, uint16_t payload_len, uint16_t ip_id)
{
	memcpy(h, dst_mac, 6);
	memcpy(h + 6, src_mac, 6);
	wr16(h + 12, ETHERTYPE_IPV4);
	uint8_t *ip = h + FG_NET_ETH_LEN;
	ip[0] = 0x45;
	ip[1] = 0;
	wr16(ip + 2, (uint16_t)(FG_NET_IP_LEN + FG_NET_UDP_LEN + payload_len));
	wr16(ip + 4, ip_id);
	wr16(ip + 6, 0x4000); /* don't fragment */
	ip[8] = 64;
	ip[9] = IPPROTO_UDP_;
	wr16(ip + 10, 0);
	memcpy(ip + 12, &src_ip, 4);
	memcpy(ip + 16, &dst_ip, 4);
	wr16(ip + 10, ip_checksum(ip, FG_NET_IP_LEN));
	uint8_t *u = ip + FG_NET_IP_LEN;
	memcpy(u, &src_port, 2);
	memcpy(u + 2, &dst_port, 2);
	wr16(u + 4, (uint16_t)(FG_NET_UDP_LEN + payload_len));
	wr16(u + 6, 0);
}

void fg_net_build_arp(uint8_t *f, uint16_t op, const uint8_t sha[6], uint32_t spa, const uint8_t tha[6],
		      uint32_t tpa)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	memcpy(f, op == FG_NET_ARP_REQUEST ? bcast : tha, 6);
	memcpy(f + 6, sha, 6);
	wr16(f + 12, ETHERTYPE_ARP);
	uint8_t *a = f + FG_NET_ETH_LEN;
	wr16(a, 1);
	wr16(a + 2, ETHERTYPE_IPV4);
	a[4] = 6;
	a[5] = 4;
	wr16(a + 6, op);
	memcpy(a + 8, sha, 6);
	memcpy(a + 14, &spa, 4);
	if (op == FG_NET_ARP_REQUEST)
		memset(a + 18, 0, 6);
	else
		memcpy(a + 18, tha, 6);
	memcpy(a + 24, &tpa, 4);
}
