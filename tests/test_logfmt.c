/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests: log lines (common/base/logfmt.h) — escaping, JSON validity, cutting,
 * levels — the per-interval tally that rate-limits drop lines and the
 * burst limit on refusal lines; the sink's level filter (control/log.h). */
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"
#include "logfmt.h"
#include "test.h"

#define T0 1764082800123456789ull /* 2025-11-25T15:00:00.123Z */
#define S 1000000000ull

/* Hostile values: quotes, backslashes, newlines, a terminal escape, a NUL-free
 * control byte, valid UTF-8 and bytes that are not UTF-8. */
static const char *const hostile[] = {
	"plain-name.v1", "", "two words", "quote\"d", "back\\slash", "line\nbreak\r\n", "tab\there",
	"esc\x1b[31mred", "bell\x07", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "bad\xff\xfe utf8 \xc3",
	"overlong\xc0\xaf", "surrogate\xed\xa0\x80", "key=value", "{\"json\":1}",
};

static json_t *parse_json_line(const char *line, size_t len)
{
	CHECK(len > 0 && line[len - 1] == '\n');
	CHECK(memchr(line, '\n', len - 1) == NULL); /* one line */
	json_error_t e;
	json_t *j = json_loadb(line, len, 0, &e);
	if (!j)
		fprintf(stderr, "  not JSON (%s): %s", e.text, line);
	return j;
}

TEST(json_lines_parse_and_keep_every_value)
{
	char buf[FG_LOG_LINE_MAX];
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		struct fg_log_field f[] = { FG_LOG_STR("name", hostile[i]), FG_LOG_UINT("uid", 65534),
					    FG_LOG_INT("delta", -3), FG_LOG_BOOL("ok", true), FG_LOG_STR("none", NULL) };
		size_t n = fg_logfmt_line(buf, sizeof(buf), FG_LOG_JSON, T0, FG_LOG_WARN, hostile[i], f, 5);
		CHECK_EQ(n, strlen(buf));
		json_t *j = parse_json_line(buf, n);
		CHECK(j != NULL);
		CHECK_STR(json_string_value(json_object_get(j, "ts")), "2025-11-25T15:00:00.123Z");
		CHECK_STR(json_string_value(json_object_get(j, "level")), "warn");
		CHECK_EQ(json_integer_value(json_object_get(j, "uid")), 65534);
		CHECK_EQ(json_integer_value(json_object_get(j, "delta")), -3);
		CHECK(json_is_true(json_object_get(j, "ok")));
		CHECK_STR(json_string_value(json_object_get(j, "none")), "");
		CHECK(json_object_get(j, "truncated") == NULL);
		/* Valid UTF-8 (and all of ASCII) arrives unchanged; other bytes become U+FFFD. */
		const char *name = json_string_value(json_object_get(j, "name"));
		CHECK(name != NULL);
		if (name && i < 10)
			CHECK_STR(name, hostile[i]);
		if (name && i >= 10 && i < 13)
			CHECK(strstr(name, "\xef\xbf\xbd") != NULL);
		CHECK_STR(json_string_value(json_object_get(j, "msg")), name ? name : "");
		json_decref(j);
	}
}

TEST(text_lines_stay_one_line_and_quote_what_is_not_plain)
{
	char buf[FG_LOG_LINE_MAX];
	struct fg_log_field f[] = { FG_LOG_STR("backend", "192.0.2.10:7501"), FG_LOG_STR("name", "we\"ird\n name"),
				    FG_LOG_UINT("count", 7), FG_LOG_STR("empty", "") };
	size_t n = fg_logfmt_line(buf, sizeof(buf), FG_LOG_TEXT, T0, FG_LOG_INFO, "backend ejected", f, 4);
	CHECK_STR(buf, "ts=2025-11-25T15:00:00.123Z level=info msg=\"backend ejected\" backend=192.0.2.10:7501 "
		       "name=\"we\\\"ird\\n name\" count=7 empty=\"\"\n");
	CHECK_EQ(n, strlen(buf));
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		struct fg_log_field h = FG_LOG_STR("v", hostile[i]);
		n = fg_logfmt_line(buf, sizeof(buf), FG_LOG_TEXT, T0, FG_LOG_ERROR, "m", &h, 1);
		CHECK(memchr(buf, '\n', n - 1) == NULL);
		for (size_t k = 0; k < n - 1; k++) /* nothing a terminal would act on, nothing not ASCII */
			CHECK((unsigned char)buf[k] >= 0x20 && (unsigned char)buf[k] < 0x7f);
	}
	struct fg_log_field esc = FG_LOG_STR("v", "esc\x1b[31m\xff=");
	fg_logfmt_line(buf, sizeof(buf), FG_LOG_TEXT, T0, FG_LOG_DEBUG, "m", &esc, 1);
	CHECK(strstr(buf, "level=debug msg=m v=\"esc\\x1b[31m\\xff=\"\n") != NULL);
}

TEST(long_values_are_cut_and_the_line_stays_well_formed)
{
	static char big[3 * FG_LOG_LINE_MAX];
	char buf[FG_LOG_LINE_MAX];
	/* Every length around the limit, with escapes that must not be split. */
	for (size_t len = FG_LOG_LINE_MAX - 300; len < FG_LOG_LINE_MAX + 40; len++) {
		for (size_t k = 0; k < len; k++)
			big[k] = k % 7 == 3 ? '"' : k % 11 == 5 ? '\x01' : 'a';
		big[len] = 0;
		struct fg_log_field f[] = { FG_LOG_STR("first", big), FG_LOG_UINT("after", 1) };
		size_t n = fg_logfmt_line(buf, sizeof(buf), FG_LOG_JSON, T0, FG_LOG_INFO, "cut", f, 2);
		CHECK(n < FG_LOG_LINE_MAX);
		json_t *j = parse_json_line(buf, n);
		CHECK(j != NULL && json_is_true(json_object_get(j, "truncated")));
		json_decref(j);
		n = fg_logfmt_line(buf, sizeof(buf), FG_LOG_TEXT, T0, FG_LOG_INFO, "cut", f, 2);
		CHECK(n < FG_LOG_LINE_MAX && strstr(buf, "\" truncated=true\n") != NULL);
	}
	/* A short buffer holds a well-formed line too. */
	struct fg_log_field f = FG_LOG_STR("x", "0123456789012345678901234567890123456789");
	size_t n = fg_logfmt_line(buf, 100, FG_LOG_JSON, T0, FG_LOG_INFO, "a message", &f, 1);
	CHECK(n < 100);
	json_t *j = parse_json_line(buf, n);
	CHECK(j != NULL);
	json_decref(j);
}

TEST(levels_are_named_and_filtered)
{
	CHECK_STR(fg_log_level_name(FG_LOG_DEBUG), "debug");
	CHECK_STR(fg_log_level_name(FG_LOG_ERROR), "error");
	fg_log_configure(FG_LOG_JSON, FG_LOG_WARN);
	CHECK(!fg_log_enabled(FG_LOG_DEBUG) && !fg_log_enabled(FG_LOG_INFO));
	CHECK(fg_log_enabled(FG_LOG_WARN) && fg_log_enabled(FG_LOG_ERROR));
	/* What the sink writes: only lines at or above the level, each one JSON line. */
	int p[2];
	CHECK_EQ(pipe(p), 0);
	int saved = dup(2);
	dup2(p[1], 2);
	fg_log(FG_LOG_INFO, "not written", FG_LOG_UINT("n", 1));
	fg_log(FG_LOG_WARN, "written", FG_LOG_STR("who", "x\"y"));
	fg_logf(FG_LOG_ERROR, "formatted %d", 42);
	FILE *dpdk = fg_log_stream_open("dpdk", NULL); /* info: filtered */
	fprintf(dpdk, "EAL: a library line\n");
	fclose(dpdk);
	dup2(saved, 2);
	close(saved);
	close(p[1]);
	char out[4096];
	ssize_t n = read(p[0], out, sizeof(out) - 1);
	close(p[0]);
	out[n > 0 ? n : 0] = 0;
	CHECK(strstr(out, "not written") == NULL && strstr(out, "a library line") == NULL);
	CHECK(strstr(out, "\"msg\":\"written\",\"who\":\"x\\\"y\"}\n") != NULL);
	CHECK(strstr(out, "\"level\":\"error\",\"msg\":\"formatted 42\"}\n") != NULL);
	fg_log_configure(FG_LOG_TEXT, FG_LOG_INFO);
}

TEST(a_tally_reports_each_counter_at_most_once_per_interval)
{
	struct fg_log_tally t;
	uint64_t totals[3] = { 5, 0, 9 }, d[3] = { 77, 77, 77 };
	fg_log_tally_init(&t, 10 * S, totals, 3, 100 * S);
	totals[0] = 8;
	CHECK(!fg_log_tally_due(&t, totals, d, 105 * S));
	CHECK_EQ(d[0], 77); /* untouched before the interval ends */
	totals[0] = 12;
	totals[1] = 1;
	CHECK(fg_log_tally_due(&t, totals, d, 110 * S));
	CHECK_EQ(d[0], 7); /* counted since the start, not since the early look */
	CHECK_EQ(d[1], 1);
	CHECK_EQ(d[2], 0);
	totals[0] = 1000;
	CHECK(!fg_log_tally_due(&t, totals, d, 119 * S)); /* a burst waits for the next interval */
	CHECK(fg_log_tally_due(&t, totals, d, 120 * S));
	CHECK_EQ(d[0], 988);
	totals[2] = 3; /* went back (restarted): nothing, not a huge number */
	CHECK(fg_log_tally_due(&t, totals, d, 130 * S));
	CHECK_EQ(d[2], 0);
}

TEST(a_burst_writes_at_most_max_per_window_and_counts_the_rest)
{
	struct fg_log_burst b = { .window_ns = S, .max = 3 };
	uint64_t sup = 99, t = 50 * S;
	unsigned written = 0;
	for (int i = 0; i < 100; i++)
		written += fg_log_burst_allow(&b, t + (uint64_t)i, &sup);
	CHECK_EQ(written, 3);
	CHECK_EQ(sup, 0);
	CHECK(fg_log_burst_allow(&b, t + S, &sup)); /* the next window */
	CHECK_EQ(sup, 97);                          /* told with the first line after them */
	CHECK(fg_log_burst_allow(&b, t + S + 1, &sup));
	CHECK_EQ(sup, 0);
}

TEST_MAIN
