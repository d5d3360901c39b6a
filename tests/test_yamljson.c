/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of yamljson (common/objects/yamljson.h): scalar typing, aliases
 * refused, the nesting limit at 64 containers, and documents too deep for it
 * refused in the first pass, however deep (a 4 MiB "[[[[" took hours in
 * libyaml's loader before: issue 26), with the line and column named. */
#include <stdlib.h>

#include "yamljson.h"
#include "test.h"

static json_t *load(const char *text, char *err, size_t errlen)
{
	err[0] = 0;
	return fg_load_documents((const uint8_t *)text, strlen(text), err, errlen);
}

TEST(scalars_typed_as_yaml_1_2_core)
{
	char err[256];
	json_t *d = load("a: 1\nb: -2.5\nc: true\nd: ~\ne: \"1\"\nf: x\n", err, sizeof(err));
	CHECK(d && json_array_size(d) == 1);
	json_t *o = json_array_get(d, 0);
	CHECK(json_integer_value(json_object_get(o, "a")) == 1);
	CHECK(json_real_value(json_object_get(o, "b")) == -2.5);
	CHECK(json_is_true(json_object_get(o, "c")));
	CHECK(json_is_null(json_object_get(o, "d")));
	CHECK_STR(json_string_value(json_object_get(o, "e")), "1");
	CHECK_STR(json_string_value(json_object_get(o, "f")), "x");
	json_decref(d);
}

TEST(aliases_refused)
{
	char err[256];
	CHECK(!load("a: &x [1, 2]\nb: *x\n", err, sizeof(err)));
	CHECK(strstr(err, "aliases are not supported (line 2)"));
}

/* n nested flow sequences as a mapping's value (YAML, not JSON). */
static char *nested(size_t n, const char *open, const char *close)
{
	size_t lo = strlen(open), lc = strlen(close);
	char *s = malloc(3 + n * (lo + lc) + 1), *p = s;
	memcpy(p, "a: ", 3);
	p += 3;
	for (size_t i = 0; i < n; i++, p += lo)
		memcpy(p, open, lo);
	for (size_t i = 0; i < n; i++, p += lc)
		memcpy(p, close, lc);
	*p = 0;
	return s;
}

TEST(nesting_up_to_the_limit)
{
	char err[256];
	char *ok = nested(63, "[", "]"); /* with the mapping: 64 containers */
	json_t *d = load(ok, err, sizeof(err));
	CHECK(d);
	json_decref(d);
	free(ok);
	char *deep = nested(64, "[", "]");
	CHECK(!load(deep, err, sizeof(err)));
	CHECK(strstr(err, "nested deeper than 64 levels (line 1 column 67)"));
	free(deep);
}

TEST(very_deep_documents_refused_at_once)
{
	char err[256];
	/* 4 MiB of flow nesting, closed or not, sequences and mappings. */
	const char *shapes[][2] = { { "[", "]" }, { "[", "" }, { "{a: ", "}" } };
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		char *s = nested((4u << 20) / 4, shapes[i][0], shapes[i][1]);
		CHECK(!load(s, err, sizeof(err)));
		CHECK(strstr(err, "nested deeper than 64 levels"));
		free(s);
	}
	/* Compact block sequences: "- - - - x" nests one level per "- ". */
	size_t n = 1u << 20;
	char *s = malloc(2 * n + 3);
	for (size_t i = 0; i < n; i++)
		memcpy(s + 2 * i, "- ", 2);
	memcpy(s + 2 * n, "x", 2);
	CHECK(!load(s, err, sizeof(err)));
	CHECK(strstr(err, "nested deeper than 64 levels"));
	free(s);
}

TEST(several_documents)
{
	char err[256];
	json_t *d = load("---\na: 1\n---\n---\nb: 2\n", err, sizeof(err));
	CHECK(d && json_array_size(d) == 2); /* the empty document is dropped */
	json_decref(d);
	CHECK(!load("a: [1\n", err, sizeof(err)));
	CHECK(strstr(err, "YAML error at line"));
}

TEST_MAIN
