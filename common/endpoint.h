/* SPDX-License-Identifier: Apache-2.0 */
/*
 * endpoint — a UDP peer as both I/O modes see it: IPv4 address and port in
 * network byte order, plus the Ethernet address the DPDK mode answers to
 * (all zero in socket mode).  Protocol v1 deployments are IPv4.
 */
#ifndef FG_ENDPOINT_H
#define FG_ENDPOINT_H

#include <stdint.h>
#include <string.h>

struct fg_endpoint {
	uint32_t ip;   /* network byte order */
	uint16_t port; /* network byte order */
	uint8_t mac[6];
};

static inline int fg_endpoint_same_addr(const struct fg_endpoint *a, const struct fg_endpoint *b)
{
	return a->ip == b->ip && a->port == b->port;
}

/* Parse "A.B.C.D:PORT" (port 1..65535).  Returns 0 or -EINVAL. */
int fg_endpoint_parse(const char *s, struct fg_endpoint *ep);
/* Format as "A.B.C.D:PORT" into buf (at least 22 bytes). */
const char *fg_endpoint_format(const struct fg_endpoint *ep, char *buf, size_t cap);
/* Parse "aa:bb:cc:dd:ee:ff".  Returns 0 or -EINVAL. */
int fg_mac_parse(const char *s, uint8_t mac[6]);

#endif
