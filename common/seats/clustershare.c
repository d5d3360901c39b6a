/* SPDX-License-Identifier: Apache-2.0 */
/* clustershare — between the cluster thread and the allotter thread; see clustershare.h. */
#include "clustershare.h"

#include <string.h>

const struct fg_cluster_cap *fg_cluster_cap_of(const struct fg_cluster_caps *caps, const char *name)
{
	for (uint32_t i = 0; i < caps->n && i < FG_MAX_LEVELS; i++)
		if (!strncmp(caps->levels[i].name, name, FG_LEVEL_NAME_MAX))
			return &caps->levels[i];
	return NULL;
}
