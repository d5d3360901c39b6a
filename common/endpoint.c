/* SPDX-License-Identifier: Apache-2.0 */
/* endpoint — parsing and formatting of peer addresses. */
#include "endpoint.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int fg_endpoint_parse(const char *s, struct fg_endpoint *ep)
{
	char host[INET_ADDRSTRLEN];
	const char *colon = strrchr(s, ':');
	if (!colon || (size_t)(colon - s) >= sizeof(host) || colon == s)
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	struct in_addr a;
	if (inet_pton(AF_INET, host, &a) != 1)
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || port == 0 || port > 65535)
		return -EINVAL;
	memset(ep, 0, sizeof(*ep));
	ep->ip = a.s_addr;
	ep->port = htons((uint16_t)port);
	return 0;
}

const char *fg_endpoint_format(const struct fg_endpoint *ep, char *buf, size_t cap)
{
	char host[INET_ADDRSTRLEN];
	struct in_addr a = { ep->ip };
	inet_ntop(AF_INET, &a, host, sizeof(host));
	snprintf(buf, cap, "%s:%u", host, ntohs(ep->port));
	return buf;
}

int fg_cidr_parse(const char *s, struct fg_cidr *c)
{
	char host[INET_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t hlen = slash ? (size_t)(slash - s) : strlen(s);
	if (hlen == 0 || hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hlen);
	host[hlen] = 0;
	struct in_addr a;
	if (inet_pton(AF_INET, host, &a) != 1)
		return -EINVAL;
	unsigned long bits = 32;
	if (slash) {
		char *end;
		errno = 0;
		bits = strtoul(slash + 1, &end, 10);
		if (errno || *end || end == slash + 1 || slash[1] == '+' || slash[1] == '-' || bits > 32)
			return -EINVAL;
	}
	uint32_t mask = bits ? htonl(~0u << (32 - bits)) : 0;
	if (a.s_addr & ~mask)
		return -EINVAL;
	c->net = a.s_addr;
	c->mask = mask;
	return 0;
}

const char *fg_cidr_format(const struct fg_cidr *c, char *buf, size_t cap)
{
	char host[INET_ADDRSTRLEN];
	struct in_addr a = { c->net };
	inet_ntop(AF_INET, &a, host, sizeof(host));
	snprintf(buf, cap, "%s/%d", host, __builtin_popcount(c->mask));
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
