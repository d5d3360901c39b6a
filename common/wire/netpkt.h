/* SPDX-License-Identifier: Apache-2.0 */
/*
 * netpkt — Ethernet/IPv4/UDP and ARP parsing and building for the DPDK mode,
 * as pure functions on byte buffers (fuzzed; no DPDK needed to test them).
 * Addresses and ports stay in network byte order.
 */
#ifndef FG_NETPKT_H
#define FG_NETPKT_H

#include <stddef.h>
#include <stdint.h>

#define FG_NET_ETH_LEN 14u
#define FG_NET_IP_LEN 20u
#define FG_NET_UDP_LEN 8u
#define FG_NET_HDRS_LEN (FG_NET_ETH_LEN + FG_NET_IP_LEN + FG_NET_UDP_LEN)
/* The port's MTU (DPDK's default, left as it is): the longest UDP payload
 * one frame carries out. */
#define FG_NET_MTU 1500u
#define FG_NET_MAX_PAYLOAD (FG_NET_MTU - FG_NET_IP_LEN - FG_NET_UDP_LEN)
#define FG_NET_ARP_FRAME_LEN 42u
#define FG_NET_ARP_REQUEST 1u
#define FG_NET_ARP_REPLY 2u

enum fg_net_kind {
	FG_NET_OTHER = 0,  /* not for us / not understood: drop */
	FG_NET_UDP,
	FG_NET_ARP,
	FG_NET_BAD,        /* claims to be IPv4/UDP/ARP but is malformed */
	FG_NET_FRAGMENT,   /* IPv4 fragment: not supported, dropped */
};

struct fg_net_frame {
	enum fg_net_kind kind;
	uint8_t src_mac[6], dst_mac[6];
	uint32_t src_ip, dst_ip;
	uint16_t src_port, dst_port;
	uint32_t payload_off, payload_len; /* UDP payload */
	uint16_t arp_op;
	uint8_t arp_sha[6];
	uint32_t arp_spa, arp_tpa;
};

/* Classify and parse one Ethernet frame. */
enum fg_net_kind fg_net_parse(const uint8_t *frame, size_t len, struct fg_net_frame *out);

/* Write Ethernet+IPv4+UDP headers (FG_NET_HDRS_LEN bytes) in front of a
 * payload of payload_len bytes; the IPv4 checksum is computed, the UDP one
 * left zero (optional over IPv4). */
void fg_net_build_udp(uint8_t *hdrs, const uint8_t src_mac[6], const uint8_t dst_mac[6], uint32_t src_ip,
		      uint32_t dst_ip, uint16_t src_port, uint16_t dst_port, uint16_t payload_len, uint16_t ip_id);

/* Write an ARP frame (FG_NET_ARP_FRAME_LEN bytes).  For a request, tha is
 * zero and the Ethernet destination is broadcast. */
void fg_net_build_arp(uint8_t *frame, uint16_t op, const uint8_t sha[6], uint32_t spa, const uint8_t tha[6],
		      uint32_t tpa);

#endif
