/* SPDX-License-Identifier: Apache-2.0 */
/*
 * expfmt — a writer of the Prometheus text exposition format, version 0.0.4
 * (the body of GET /metrics, control/http.h): metric families with their
 * "# HELP" and "# TYPE" lines, then samples with labels.
 *
 * Invariants: every name written is valid — metric names match
 * [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* and do not
 * start with "__" (reserved by Prometheus); a call with an invalid name writes
 * nothing and makes fg_expfmt_finish() fail with -EINVAL, so a programming
 * error shows in tests instead of as a scrape Prometheus refuses.  Label
 * values are escaped (backslash, double quote, newline), HELP text too
 * (backslash, newline).  The body never grows past FG_EXPFMT_MAX_BODY
 * (-E2BIG); an allocation failure is -ENOMEM; after an error later calls do
 * nothing.  Samples of one family are written right after its header (the
 * format wants a family's lines together); the caller keeps that order.
 *
 * Thread contract: one writer per struct, any thread; no global state.
 */
#ifndef FG_EXPFMT_H
#define FG_EXPFMT_H

#include <stddef.h>
#include <stdint.h>

#define FG_EXPFMT_MAX_BODY (32u << 20) /* bytes of one exposition: above 512 (level, schema) pairs'
				       * histograms (about 10 KiB each) and 256 levels x 64 workers */
#define FG_EXPFMT_MAX_LABELS 8u       /* label pairs of one sample */
#define FG_EXPFMT_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

enum fg_expfmt_type { FG_EXPFMT_COUNTER, FG_EXPFMT_GAUGE, FG_EXPFMT_UNTYPED, FG_EXPFMT_HISTOGRAM };

struct fg_expfmt {
	char *buf;
	size_t len, cap;
	int err; /* the first error; 0 */
};

/* A label of a sample: name and value (any bytes up to NUL; escaped). */
struct fg_expfmt_label {
	const char *name, *value;
};

void fg_expfmt_init(struct fg_expfmt *e);
/* Frees the body unless fg_expfmt_finish() took it. */
void fg_expfmt_fini(struct fg_expfmt *e);

/* "# HELP name help" and "# TYPE name type". */
void fg_expfmt_family(struct fg_expfmt *e, const char *name, enum fg_expfmt_type type, const char *help);

/* One sample "name{l1="v1",...} value": n labels (at most FG_EXPFMT_MAX_LABELS). */
void fg_expfmt_u64(struct fg_expfmt *e, const char *name, const struct fg_expfmt_label *labels, unsigned n,
		   uint64_t value);
/* The same with a float value (NaN and infinities as the format spells them). */
void fg_expfmt_double(struct fg_expfmt *e, const char *name, const struct fg_expfmt_label *labels, unsigned n,
		      double value);

/* One histogram's samples (the family written before, type histogram):
 * name_bucket{labels..., le="B"} for each of the n_bounds bounds (printed
 * with %g) and le="+Inf", cumulative over counts[0..n_bounds] (one count per
 * bucket, the last one +Inf's own), then name_sum and name_count.  n labels,
 * fewer than FG_EXPFMT_MAX_LABELS (le is one more). */
void fg_expfmt_histogram(struct fg_expfmt *e, const char *name, const struct fg_expfmt_label *labels, unsigned n,
			 const double *bounds, const uint64_t *counts, unsigned n_bounds, double sum);

/* The body (NUL-terminated, *len bytes) handed to the caller, who frees it;
 * or NULL and the first error (-EINVAL, -E2BIG, -ENOMEM) in *err. */
char *fg_expfmt_finish(struct fg_expfmt *e, size_t *len, int *err);

/* Whether name is a valid metric name / label name (see above). */
int fg_expfmt_metric_name_ok(const char *name);
int fg_expfmt_label_name_ok(const char *name);

#endif
