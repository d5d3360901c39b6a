/* SPDX-License-Identifier: Apache-2.0 */
/* endpoint — parsing and formatting of peer addresses. */
#include "endpoint.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The IPv4 address in s[0..len), dotted quad only. */
static int parse_ipv4(const char *s, size_t len, uint32_t *ip)
{
	char host[INET_ADDRSTRLEN];
	struct in_addr a;
	if (len == 0 || len >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, len);
	host[len] = 0;
	if (inet_pton(AF_INET, host, &a) != 1)
		return -EINVAL;
	*ip = a.s_addr;
	return 0;
}

/* A decimal number in [lo, hi]: digits only, no sign, no blanks. */
static int parse_decimal(const char *s, unsigned long lo, unsigned long hi, unsigned long *v)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno || *end || *v < lo || *v > hi ? -EINVAL : 0;
}

static const char *format_ipv4(uint32_t ip, char host[INET_ADDRSTRLEN])
{
	struct in_addr a = { ip };
	return inet_ntop(AF_INET, &a, host, INET_ADDRSTRLEN);
}

static int parse_endpoint(const char *s, unsigned long min_port, struct fg_endpoint *ep)
{
	const char *colon = strrchr(s, ':');
	uint32_t ip;
	unsigned long port;
	if (!colon || parse_ipv4(s, (size_t)(colon - s), &ip) || parse_decimal(colon + 1, min_port, 65535, &port))
		return -EINVAL;
	memset(ep, 0, sizeof(*ep));
	ep->ip = ip;
	ep->port = htons((uint16_t)port);
	return 0;
}

int fg_endpoint_parse(const char *s, struct fg_endpoint *ep)
{
	return parse_endpoint(s, 1, ep);
}

int fg_endpoint_parse_bind(const char *s, struct fg_endpoint *ep)
{
	return parse_endpoint(s, 0, ep);
}

const char *fg_endpoint_format(const struct fg_endpoint *ep, char *buf, size_t cap)
{
	char host[INET_ADDRSTRLEN];
	snprintf(buf, cap, "%s:%u", format_ipv4(ep->ip, host), ntohs(ep->port));
	return buf;
}

int fg_cidr_parse(const char *s, struct fg_cidr *c)
{
	const char *slash = strchr(s, '/');
	uint32_t ip;
	unsigned long bits = 32;
	if (parse_ipv4(s, slash ? (size_t)(slash - s) : strlen(s), &ip) || (slash && parse_decimal(slash + 1, 0, 32, &bits)))
		return -EINVAL;
	uint32_t mask = bits ? htonl(~0u << (32 - bits)) : 0;
	if (ip & ~mask)
		return -EINVAL;
	c->net = ip;
	c->mask = mask;
	return 0;
}

const char *fg_cidr_format(const struct fg_cidr *c, char *buf, size_t cap)
{
	char host[INET_ADDRSTRLEN];
	snprintf(buf, cap, "%s/%d", format_ipv4(c->net, host), __builtin_popcount(c->mask));
	return buf;
}

int fg_mac_parse(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;
	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return 0;
}

/* One "http(s)://HOST:PORT" of len bytes at u. */
static int url_check(const char *u, size_t len, char *why, size_t whylen)
{
	if (len >= FG_URL_MAX) {
		snprintf(why, whylen, "a URL is at most %u bytes", FG_URL_MAX - 1);
		return -EINVAL;
	}
	size_t scheme = len >= 8 && !strncmp(u, "https://", 8) ? 8 : len >= 7 && !strncmp(u, "http://", 7) ? 7 : 0;
	if (!scheme) {
		snprintf(why, whylen, "\"%.*s\" must be http://HOST:PORT or https://HOST:PORT", (int)(len < 64 ? len : 64), u);
		return -EINVAL;
	}
	const char *host = u + scheme, *end = u + len, *colon = host;
	while (colon < end && *colon != ':')
		colon++;
	size_t hlen = (size_t)(colon - host), ok = 0;
	while (ok < hlen && (isalnum((unsigned char)host[ok]) || host[ok] == '.' || host[ok] == '-'))
		ok++;
	if (!hlen || ok < hlen || host[0] == '-' || host[0] == '.') {
		snprintf(why, whylen, "\"%.*s\": the host must be a name or an IPv4 address", (int)(len < 64 ? len : 64), u);
		return -EINVAL;
	}
	unsigned long port = 0;
	const char *p = colon + 1;
	size_t digits = 0;
	while (p + digits < end && isdigit((unsigned char)p[digits]) && digits < 6)
		port = port * 10 + (unsigned long)(p[digits++] - '0');
	if (colon >= end || !digits || p + digits != end || port == 0 || port > 65535) {
		snprintf(why, whylen, "\"%.*s\" must end in :PORT (1-65535) with nothing after it",
			 (int)(len < 64 ? len : 64), u);
		return -EINVAL;
	}
	return 0;
}

int fg_urls_parse(const char *text, unsigned max, char (*out)[FG_URL_MAX], char *why, size_t whylen)
{
	unsigned n = 0;
	if (!*text)
		return 0;
	for (const char *p = text;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (n == max) {
			snprintf(why, whylen, "at most %u URLs", max);
			return -EINVAL;
		}
		if (url_check(p, len, why, whylen))
			return -EINVAL;
		if (out)
			snprintf(out[n], FG_URL_MAX, "%.*s", (int)len, p);
		n++;
		if (!comma)
			break;
		p = comma + 1;
	}
	return (int)n;
}
