/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trust — the trust boundary for request sources (docs/security.md).
 *
 * A request's user and group attributes are believed only when it comes
 * from a trusted source (settings trustedSources, loopback by default).  A
 * request from any other source is classified with the identity its address
 * maps to (sourceIdentities, first match wins) or, when none matches, as
 * Kubernetes classifies unauthenticated requests: user system:anonymous in
 * group system:unauthenticated.  The other attributes (verb, resource,
 * namespace, ...) describe the request, not the requester, and are kept.
 *
 * Invariant: a fg_trust is built once per configuration from the settings
 * and never changes; the string views point into the struct itself.
 *
 * Thread contract: built by the control thread; read by any worker.
 */
#ifndef FG_TRUST_H
#define FG_TRUST_H

#include <stdbool.h>
#include <stdint.h>

#include "endpoint.h"
#include "proto.h"
#include "settings.h"

struct fg_fc_request;

struct fg_trust {
	enum fg_addr_validation addr_validation;
	uint32_t n_trusted;
	struct fg_cidr trusted[FG_MAX_CIDRS];
	uint32_t n_identities;
	struct fg_source_identity identities[FG_MAX_SOURCE_IDENTITIES];
	struct fg_str groups[FG_MAX_SOURCE_IDENTITIES][FG_IDENTITY_MAX_GROUPS]; /* views of identities[i].groups */
};

/* Copy what the settings say; the struct must not move afterwards. */
void fg_trust_init(struct fg_trust *t, const struct fg_settings *s);

static inline bool fg_trust_source(const struct fg_trust *t, uint32_t ip)
{
	for (uint32_t i = 0; i < t->n_trusted; i++)
		if (fg_cidr_contains(&t->trusted[i], ip))
			return true;
	return false;
}

/* Whether a request from a (trusted or untrusted) source must carry a valid cookie. */
static inline bool fg_trust_needs_cookie(const struct fg_trust *t, bool trusted)
{
	return t->addr_validation == FG_AV_ALL || (t->addr_validation == FG_AV_UNTRUSTED && !trusted);
}

/* An untrusted source's request: replace user and groups by the identity of
 * its address (or anonymous).  The new strings are not in the packet: they
 * live in t (or are static) and are valid while t's configuration is; code
 * that carries a request's strings as offsets into its packet must not take
 * them for packet bytes. */
void fg_trust_assign_identity(const struct fg_trust *t, uint32_t ip, struct fg_fc_request *r);

#endif
