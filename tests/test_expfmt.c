/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests: the Prometheus text exposition writer (control/expfmt.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "expfmt.h"
#include "test.h"

/* The body of e, finished; NULL and *err on error. */
static char *body(struct fg_expfmt *e, int *err)
{
	size_t len = 0;
	char *b = fg_expfmt_finish(e, &len, err);
	if (b && strlen(b) != len)
		*err = -EILSEQ;
	return b;
}

TEST(family_and_samples)
{
	struct fg_expfmt e;
	fg_expfmt_init(&e);
	fg_expfmt_family(&e, "fairgate_x_total", FG_EXPFMT_COUNTER, "Things.");
	struct fg_expfmt_label l[2] = { { "worker", "0" }, { "reason", "queue-full" } };
	fg_expfmt_u64(&e, "fairgate_x_total", l, 2, 18446744073709551615ull);
	fg_expfmt_family(&e, "g", FG_EXPFMT_GAUGE, "");
	fg_expfmt_double(&e, "g", NULL, 0, 0.5);
	fg_expfmt_double(&e, "g", l, 1, NAN);
	fg_expfmt_double(&e, "g", l + 1, 1, -INFINITY);
	int err = 1;
	char *b = body(&e, &err);
	CHECK_EQ(err, 0);
	CHECK_STR(b ? b : "", "# HELP fairgate_x_total Things.\n# TYPE fairgate_x_total counter\n"
			      "fairgate_x_total{worker=\"0\",reason=\"queue-full\"} 18446744073709551615\n"
			      "# HELP g \n# TYPE g gauge\ng 0.5\ng{worker=\"0\"} NaN\ng{reason=\"queue-full\"} -Inf\n");
	free(b);
}

/* Buckets cumulative with Prometheus' le spelling, then _sum and _count. */
TEST(histogram)
{
	struct fg_expfmt e;
	fg_expfmt_init(&e);
	fg_expfmt_family(&e, "h_seconds", FG_EXPFMT_HISTOGRAM, "Waits.");
	struct fg_expfmt_label l = { "priority_level", "p" };
	const double bounds[3] = { 0, 0.005, 30 };
	const uint64_t counts[4] = { 1, 0, 2, 3 };
	fg_expfmt_histogram(&e, "h_seconds", &l, 1, bounds, counts, 3, 1.25);
	int err = 1;
	char *b = body(&e, &err);
	CHECK_EQ(err, 0);
	CHECK_STR(b ? b : "", "# HELP h_seconds Waits.\n# TYPE h_seconds histogram\n"
			      "h_seconds_bucket{priority_level=\"p\",le=\"0\"} 1\n"
			      "h_seconds_bucket{priority_level=\"p\",le=\"0.005\"} 1\n"
			      "h_seconds_bucket{priority_level=\"p\",le=\"30\"} 3\n"
			      "h_seconds_bucket{priority_level=\"p\",le=\"+Inf\"} 6\n"
			      "h_seconds_sum{priority_level=\"p\"} 1.25\n"
			      "h_seconds_count{priority_level=\"p\"} 6\n");
	free(b);
	/* le is one label more: a full label set is refused. */
	struct fg_expfmt_label many[FG_EXPFMT_MAX_LABELS];
	for (unsigned i = 0; i < FG_EXPFMT_MAX_LABELS; i++)
		many[i] = (struct fg_expfmt_label){ "a", "b" };
	fg_expfmt_init(&e);
	fg_expfmt_histogram(&e, "h", many, FG_EXPFMT_MAX_LABELS, bounds, counts, 3, 0);
	b = body(&e, &err);
	CHECK(b == NULL && err == -EINVAL);
}

TEST(escaping)
{
	struct fg_expfmt e;
	fg_expfmt_init(&e);
	fg_expfmt_family(&e, "a", FG_EXPFMT_GAUGE, "back\\slash \"quoted\"\nnext");
	struct fg_expfmt_label l = { "priority_level", "a\\b\"c\nd" };
	fg_expfmt_u64(&e, "a", &l, 1, 1);
	int err = 1;
	char *b = body(&e, &err);
	CHECK_EQ(err, 0);
	/* HELP escapes backslash and newline only; label values also the quote. */
	CHECK_STR(b ? b : "", "# HELP a back\\\\slash \"quoted\"\\nnext\n# TYPE a gauge\n"
			      "a{priority_level=\"a\\\\b\\\"c\\nd\"} 1\n");
	free(b);
}

TEST(names_are_validated)
{
	CHECK(fg_expfmt_metric_name_ok("a:b_c9"));
	CHECK(!fg_expfmt_metric_name_ok("9a"));
	CHECK(!fg_expfmt_metric_name_ok("a-b"));
	CHECK(!fg_expfmt_metric_name_ok(""));
	CHECK(fg_expfmt_label_name_ok("flow_schema"));
	CHECK(!fg_expfmt_label_name_ok("__name__"));
	CHECK(!fg_expfmt_label_name_ok("a:b"));
	const char *bad_metric[] = { "a b", "é", "x{" };
	for (unsigned i = 0; i < 3; i++) {
		struct fg_expfmt e;
		fg_expfmt_init(&e);
		fg_expfmt_u64(&e, bad_metric[i], NULL, 0, 1);
		int err = 0;
		char *b = body(&e, &err);
		CHECK(b == NULL && err == -EINVAL);
	}
	struct fg_expfmt e;
	fg_expfmt_init(&e);
	struct fg_expfmt_label l = { "le-x", "1" };
	fg_expfmt_u64(&e, "ok", &l, 1, 1);
	fg_expfmt_u64(&e, "ok", NULL, 0, 1); /* nothing after an error */
	int err = 0;
	CHECK(body(&e, &err) == NULL && err == -EINVAL);
	fg_expfmt_init(&e);
	fg_expfmt_u64(&e, "ok", &l, FG_EXPFMT_MAX_LABELS + 1, 1);
	CHECK(body(&e, &err) == NULL && err == -EINVAL);
}

TEST(body_is_bounded)
{
	static char big[1 << 16];
	memset(big, 'v', sizeof(big) - 1);
	struct fg_expfmt e;
	fg_expfmt_init(&e);
	struct fg_expfmt_label l = { "x", big };
	unsigned i;
	for (i = 0; i < 1000 && !e.err; i++) /* 1000 x 64 KiB is far beyond the bound */
		fg_expfmt_u64(&e, "m", &l, 1, i);
	CHECK(i < 1000);
	CHECK(e.len < FG_EXPFMT_MAX_BODY);
	int err = 0;
	CHECK(body(&e, &err) == NULL && err == -E2BIG);
}

TEST(empty_body)
{
	struct fg_expfmt e;
	fg_expfmt_init(&e);
	int err = 1;
	char *b = body(&e, &err);
	CHECK(b != NULL && err == 0 && !*b);
	free(b);
}

TEST_MAIN
