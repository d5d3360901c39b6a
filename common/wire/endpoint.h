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
#include <arpa/inet.h>
#include <stddef.h>

struct fg_endpoint {
	uint32_t ip;   /* network byte order */
	uint16_t port; /* network byte order */
	uint8_t mac[6];
};

static inline int fg_endpoint_same_addr(const struct fg_endpoint *a, const struct fg_endpoint *b)
{
	return a->ip == b->ip && a->port == b->port;
}

/* Whether datagrams sent to `to` would arrive at a socket bound to `bound`
 * on this host, as far as addresses alone tell: the same address, or the
 * same port with a wildcard on either side or loopback to a wildcard bind.
 * (A wildcard bind also receives at the host's interface addresses: the
 * daemon checks those, common/ has no interfaces.) */
static inline int fg_endpoint_reaches(const struct fg_endpoint *bound, const struct fg_endpoint *to)
{
	if (bound->port != to->port)
		return 0;
	return bound->ip == to->ip || bound->ip == 0 || to->ip == 0;
}

/* An IPv4 prefix "A.B.C.D/N", network byte order; net has no bits outside mask. */
struct fg_cidr {
	uint32_t net, mask;
};

static inline int fg_cidr_contains(const struct fg_cidr *c, uint32_t ip)
{
	return (ip & c->mask) == c->net;
}

/* 127.0.0.0/8: the only addresses a socket bound to a loopback address or to
 * 0.0.0.0 shares with this host by construction. */
static inline int fg_ip_is_loopback(uint32_t ip_be)
{
	return (ip_be & htonl(0xff000000u)) == htonl(0x7f000000u);
}

/* A source address no host on a wire may use (RFC 1122 "martians"): this
 * network (0/8), loopback (127/8), multicast and reserved (224/3, so
 * broadcast too).  The kernel drops such sources; DPDK mode must itself, or
 * a spoofed 127.0.0.1 would pass for a trusted local process. */
static inline int fg_ip_is_martian_source(uint32_t ip_be)
{
	uint32_t top = ntohl(ip_be) >> 24;
	return top == 0 || top == 127 || top >= 224;
}

/* Parse "A.B.C.D/N" (N 0..32; "A.B.C.D" alone is /32).  Host bits must be
 * zero (so a typo like 10.1.2.3/8 is refused, not silently widened).
 * Returns 0 or -EINVAL. */
int fg_cidr_parse(const char *s, struct fg_cidr *c);
/* Format as "A.B.C.D/N" into buf (at least 19 bytes). */
const char *fg_cidr_format(const struct fg_cidr *c, char *buf, size_t cap);

/* Parse "A.B.C.D:PORT" (port 1..65535).  Returns 0 or -EINVAL. */
int fg_endpoint_parse(const char *s, struct fg_endpoint *ep);
/* The same for an address to bind, where port 0 means "any free port". */
int fg_endpoint_parse_bind(const char *s, struct fg_endpoint *ep);
/* Format as "A.B.C.D:PORT" into buf (at least 22 bytes). */
const char *fg_endpoint_format(const struct fg_endpoint *ep, char *buf, size_t cap);
/* Parse "aa:bb:cc:dd:ee:ff".  Returns 0 or -EINVAL. */
int fg_mac_parse(const char *s, uint8_t mac[6]);

/* The longest "http://HOST:PORT" one URL of a list may be. */
#define FG_URL_MAX 128u

/*
 * A comma-separated list of "http://HOST:PORT" or "https://HOST:PORT" URLs (HOST: a name of
 * letters, digits, '.' and '-', or an IPv4 address; PORT 1..65535; nothing
 * after the port), at most max of them, each shorter than FG_URL_MAX.
 * Returns how many (0 for ""), or -EINVAL with the reason in why.  With out
 * non-NULL, the URLs are copied there (out[max][FG_URL_MAX]).
 */
int fg_urls_parse(const char *text, unsigned max, char (*out)[FG_URL_MAX], char *why, size_t whylen);

#endif
