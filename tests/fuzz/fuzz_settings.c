/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the FairgateSettings JSON parser.  A rejected input must
 * leave the settings untouched. */
#include <stdlib.h>
#include <string.h>

#include "settings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fg_settings s, before;
	struct fg_errors e;
	memset(&e, 0, sizeof(e));
	fg_settings_defaults(&s);
	before = s;
	if (fg_settings_apply_json(&s, data, size, &e) != 0 && memcmp(&s, &before, sizeof(s)))
		abort();
	fg_settings_validate(&s, &e);
	return 0;
}
