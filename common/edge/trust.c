/* SPDX-License-Identifier: Apache-2.0 */
/* trust — trusted sources and source identities; see trust.h. */
#include "trust.h"

#include <string.h>

#include "flowcontrol.h"

static const struct fg_str anonymous_groups[1] = { { FG_UNAUTHENTICATED_GROUP, sizeof(FG_UNAUTHENTICATED_GROUP) - 1 } };

void fg_trust_init(struct fg_trust *t, const struct fg_settings *s)
{
	memset(t, 0, sizeof(*t));
	t->addr_validation = s->addr_validation;
	t->n_trusted = s->n_trusted;
	memcpy(t->trusted, s->trusted, sizeof(t->trusted[0]) * s->n_trusted);
	t->n_identities = s->n_identities;
	memcpy(t->identities, s->identities, sizeof(t->identities[0]) * s->n_identities);
	for (uint32_t i = 0; i < t->n_identities; i++)
		for (uint32_t k = 0; k < t->identities[i].n_groups; k++)
			t->groups[i][k] = fg_str_of(t->identities[i].groups[k]);
}

void fg_trust_assign_identity(const struct fg_trust *t, uint32_t ip, struct fg_fc_request *r)
{
	for (uint32_t i = 0; i < t->n_identities; i++) {
		if (fg_cidr_contains(&t->identities[i].cidr, ip)) {
			r->user = fg_str_of(t->identities[i].user);
			r->groups = t->groups[i];
			r->n_groups = t->identities[i].n_groups;
			return;
		}
	}
	r->user = (struct fg_str){ FG_ANONYMOUS_USER, sizeof(FG_ANONYMOUS_USER) - 1 };
	r->groups = anonymous_groups;
	r->n_groups = 1;
}
