/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of Ethernet/IPv4/UDP/ARP parsing and building (common/wire/netpkt.c). */
#include <arpa/inet.h>
#include <stdlib.h>

#include "netpkt.h"
#include "test.h"

static const uint8_t mac_a[6] = { 2, 0, 0, 0, 0, 1 }, mac_b[6] = { 2, 0, 0, 0, 0, 2 };

static size_t build_frame(uint8_t *f, const char *payload)
{
	size_t n = strlen(payload);
	fg_net_build_udp(f, mac_a, mac_b, inet_addr("192.0.2.1"), inet_addr("192.0.2.2"), htons(1234), htons(7400),
			 (uint16_t)n, 9);
	memcpy(f + FG_NET_HDRS_LEN, payload, n);
	return FG_NET_HDRS_LEN + n;
}

TEST(udp_roundtrip)
{
	uint8_t f[256];
	size_t n = build_frame(f, "hello fairgate");
	struct fg_net_frame p;
	CHECK_EQ(fg_net_parse(f, n, &p), FG_NET_UDP);
	CHECK(!memcmp(p.src_mac, mac_a, 6));
	CHECK(!memcmp(p.dst_mac, mac_b, 6));
	CHECK(p.src_ip == inet_addr("192.0.2.1"));
	CHECK(p.dst_ip == inet_addr("192.0.2.2"));
	CHECK_EQ(ntohs(p.src_port), 1234);
	CHECK_EQ(ntohs(p.dst_port), 7400);
	CHECK_EQ(p.payload_off, FG_NET_HDRS_LEN);
	CHECK_EQ(p.payload_len, 14);
	/* Ethernet padding after the IP packet is not payload. */
	memset(f + n, 0, 20);
	CHECK_EQ(fg_net_parse(f, n + 20, &p), FG_NET_UDP);
	CHECK_EQ(p.payload_len, 14);
}

TEST(ipv4_errors)
{
	uint8_t f[256], t[256];
	size_t n = build_frame(f, "x");
	struct fg_net_frame p;
	memcpy(t, f, n); t[14 + 10] ^= 1; /* checksum */
	CHECK_EQ(fg_net_parse(t, n, &p), FG_NET_BAD);
	CHECK_EQ(fg_net_parse(f, 20, &p), FG_NET_BAD);          /* truncated IP header */
	CHECK_EQ(fg_net_parse(f, n - 1, &p), FG_NET_BAD);       /* total length past the frame */
	memcpy(t, f, n); t[14 + 6] = 0x20; t[14 + 10] = t[14 + 11] = 0; /* MF set: fragment */
	uint32_t sum = 0;
	for (int i = 0; i < 20; i += 2) sum += (uint32_t)(t[14 + i] << 8 | t[14 + i + 1]);
	while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
	t[14 + 10] = (uint8_t)(~sum >> 8); t[14 + 11] = (uint8_t)~sum;
	CHECK_EQ(fg_net_parse(t, n, &p), FG_NET_FRAGMENT);
	memcpy(t, f, n); t[12] = 0x86; t[13] = 0xdd;            /* IPv6: not ours */
	CHECK_EQ(fg_net_parse(t, n, &p), FG_NET_OTHER);
	memcpy(t, f, n); t[14 + 38 - 14] = 0; t[14 + 39 - 14] = 3; /* UDP length < 8 */
	CHECK_EQ(fg_net_parse(t, n, &p), FG_NET_BAD);
	CHECK_EQ(fg_net_parse(f, 5, &p), FG_NET_BAD);
}

TEST(arp_request_and_reply)
{
	uint8_t f[64];
	fg_net_build_arp(f, FG_NET_ARP_REQUEST, mac_a, inet_addr("192.0.2.1"), mac_b, inet_addr("192.0.2.2"));
	struct fg_net_frame p;
	CHECK_EQ(fg_net_parse(f, FG_NET_ARP_FRAME_LEN, &p), FG_NET_ARP);
	CHECK_EQ(p.arp_op, FG_NET_ARP_REQUEST);
	CHECK(p.arp_spa == inet_addr("192.0.2.1"));
	CHECK(p.arp_tpa == inet_addr("192.0.2.2"));
	CHECK(!memcmp(p.arp_sha, mac_a, 6));
	CHECK(p.dst_mac[0] == 0xff && p.dst_mac[5] == 0xff);
	fg_net_build_arp(f, FG_NET_ARP_REPLY, mac_b, inet_addr("192.0.2.2"), mac_a, inet_addr("192.0.2.1"));
	CHECK_EQ(fg_net_parse(f, FG_NET_ARP_FRAME_LEN, &p), FG_NET_ARP);
	CHECK_EQ(p.arp_op, FG_NET_ARP_REPLY);
	CHECK(!memcmp(p.dst_mac, mac_a, 6));
	CHECK_EQ(fg_net_parse(f, 30, &p), FG_NET_BAD);
}

TEST(random_frames_never_crash)
{
	uint8_t good[256], f[256];
	size_t n = build_frame(good, "payload bytes");
	unsigned seed = 3;
	for (int i = 0; i < 200000; i++) {
		size_t len = (size_t)rand_r(&seed) % (n + 1);
		memcpy(f, good, n);
		for (int k = rand_r(&seed) % 3; k >= 0; k--)
			f[rand_r(&seed) % n] = (uint8_t)rand_r(&seed);
		struct fg_net_frame p;
		if (fg_net_parse(f, len, &p) == FG_NET_UDP)
			CHECK(p.payload_off + p.payload_len <= len);
	}
}

/* The IPv4 header checksum against a known header (RFC 1071 arithmetic;
 * the example header 4500 0073 0000 4000 4011 .... c0a8 0001 c0a8 00c7
 * has checksum b861), and a frame with any header bit flipped is refused. */
TEST(ipv4_checksum_known_vector)
{
	uint8_t f[FG_NET_HDRS_LEN + 87];
	const uint8_t mac[6] = { 2, 0, 0, 0, 0, 1 };
	uint32_t src, dst;
	memcpy(&src, (const uint8_t[]){ 192, 168, 0, 1 }, 4);
	memcpy(&dst, (const uint8_t[]){ 192, 168, 0, 199 }, 4);
	fg_net_build_udp(f, mac, mac, src, dst, 1, 2, 87, 0);
	CHECK_EQ(f[14 + 2], 0x00);
	CHECK_EQ(f[14 + 3], 0x73);
	CHECK_EQ(f[14 + 10], 0xb8);
	CHECK_EQ(f[14 + 11], 0x61);
	struct fg_net_frame p;
	CHECK_EQ(fg_net_parse(f, sizeof(f), &p), FG_NET_UDP);
	for (unsigned bit = 0; bit < 20 * 8; bit++) {
		f[14 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (fg_net_parse(f, sizeof(f), &p) == FG_NET_UDP) {
			fprintf(stderr, "  header bit %u flipped and still accepted\n", bit);
			CHECK(0);
		}
		f[14 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
}

TEST_MAIN
