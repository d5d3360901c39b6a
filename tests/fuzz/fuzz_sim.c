/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the simulator's scenario parser (fairgate-bench sim).
 * Parsing only: a valid scenario may legitimately ask for hours of
 * simulated load. */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct fg_sim *s = fg_sim_load(data, size, err, sizeof(err));
	if (!s)
		return 0;
	fg_sim_free(s);
	return 0;
}
