/* SPDX-License-Identifier: Apache-2.0 */
/* fc_errors — what the flowcontrol tests share: an input refused with
 * exactly the expected errors (each a fragment of one line), and nothing of
 * it applied.  Include after test.h and flowcontrol.h. */
#ifndef FG_TEST_FC_ERRORS_H
#define FG_TEST_FC_ERRORS_H

#include <errno.h>

static void expect_errors(const char *text, const char *const *fragments)
{
	struct fg_fc_set *s = fg_fc_set_new();
	struct fg_errors e = { .len = 0 };
	CHECK_EQ(fg_fc_set_apply(s, (const uint8_t *)text, strlen(text), NULL, &e), -EINVAL);
	unsigned n = 0;
	for (; fragments[n]; n++)
		if (!strstr(e.text, fragments[n])) {
			fprintf(stderr, "  missing \"%s\" in:\n%s", fragments[n], e.text);
			CHECK(0);
		}
	CHECK_EQ(e.count, n);
	if (e.count != n)
		fprintf(stderr, "  got:\n%s", e.text);
	CHECK_EQ(fg_fc_set_size(s), 0); /* nothing applied */
	fg_fc_set_free(s);
}

#endif
