/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the load-test scenario parser (fairgate-bench run,
 * bench/scenario.h).  Parsing only: nothing is started. */
#include <stdint.h>
#include <stdlib.h>

#include "scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct fg_scenario *s = fg_scenario_load(data, size, err, sizeof(err));
	if (s)
		fg_scenario_free(s);
	return 0;
}
