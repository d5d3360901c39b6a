/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_parsers — the worst documents the configuration parsers meet within
 * the control socket's request size (FG_CONTROL_MAX_MSG, 4 MiB): each shape
 * at that size goes through fg_fc_set_apply (YAML or JSON to objects, then
 * validation), what `validate` and `apply` run on the control thread.  The
 * figure that matters is ns per input byte staying flat as the size grows
 * (a super-linear walk shows as a ratio far above 1 between the full size
 * and a quarter of it): each shape is timed at S/4 and S.
 *
 * Shapes: flow nesting "[[[[" and "{a: {a: ..." (libyaml's scanner spends
 * time linear in the flow depth per token: quadratic before the depth was
 * cut in the first pass, common/objects/yamljson.h), compact block sequences
 * "- - - - x", indented block mappings, JSON nesting, many tiny YAML
 * documents, one mapping with many keys, one long scalar, and the largest
 * valid set (FG_FC_MAX_OBJECTS FlowSchemas).
 *
 * --quick (meson benchmark): 256 KiB instead of 4 MiB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "defs.h"
#include "flowcontrol.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct doc {
	char *p;
	size_t len, cap;
};

static void put(struct doc *d, const char *s)
{
	size_t n = strlen(s);
	if (d->len + n + 1 > d->cap) {
		d->cap = (d->len + n + 1) * 2;
		d->p = realloc(d->p, d->cap);
		if (!d->p) {
			perror("bench_parsers");
			exit(1);
		}
	}
	memcpy(d->p + d->len, s, n + 1);
	d->len += n;
}

/* Repeat unit until the document would pass size bytes. */
static void repeat(struct doc *d, const char *unit, size_t size)
{
	size_t n = strlen(unit);
	while (d->len + n <= size)
		put(d, unit);
}

/* A YAML document must not start with '{' or '[' (fg_load_documents takes
 * that for JSON): the flow shapes start as a mapping's value. */
static void flow_seq(struct doc *d, size_t size) { put(d, "a: "); repeat(d, "[", size); }
static void flow_map(struct doc *d, size_t size) { put(d, "a: "); repeat(d, "{a: ", size); }
static void block_seq(struct doc *d, size_t size) { repeat(d, "- ", size); put(d, "x\n"); }
static void json_nest(struct doc *d, size_t size) { repeat(d, "[", size); }
static void many_docs(struct doc *d, size_t size) { repeat(d, "---\n{}\n", size); }
static void wide_map(struct doc *d, size_t size)
{
	char line[64];
	for (unsigned i = 0; d->len + 32 < size; i++) {
		snprintf(line, sizeof(line), "k%u: v\n", i);
		put(d, line);
	}
}
static void long_scalar(struct doc *d, size_t size)
{
	put(d, "a: \"");
	repeat(d, "x", size - 2);
	put(d, "\"\n");
}
static void block_map(struct doc *d, size_t size)
{
	char indent[8192];
	for (unsigned depth = 0; depth < sizeof(indent) - 8; depth++) {
		memset(indent, ' ', depth);
		strcpy(indent + depth, "a:\n");
		if (d->len + strlen(indent) > size)
			break;
		put(d, indent);
	}
}
static void many_schemas(struct doc *d, size_t size)
{
	char obj[512];
	(void)size; /* the size of the largest valid set, whatever the budget */
	for (unsigned i = 0; i < FG_FC_MAX_OBJECTS - 2; i++) {
		snprintf(obj, sizeof(obj),
			 "---\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: s%u}\n"
			 "spec: {priorityLevelConfiguration: {name: global-default}, matchingPrecedence: %u,\n"
			 "  rules: [{subjects: [{kind: User, user: {name: u%u}}],\n"
			 "           nonResourceRules: [{verbs: [get], nonResourceURLs: [/p%u]}]}]}\n",
			 i, 1000 + i % 8000, i, i);
		put(d, obj);
	}
}

static const struct shape {
	const char *name;
	void (*make)(struct doc *, size_t);
	bool scales; /* false: one size only */
} shapes[] = {
	{ "yaml flow sequences [[[[", flow_seq, true },     { "yaml flow mappings {a: {a:", flow_map, true },
	{ "yaml compact sequences - - -", block_seq, true }, { "yaml indented mappings", block_map, true },
	{ "json nesting [[[[ (leading {)", json_nest, true }, { "yaml many documents ---", many_docs, true },
	{ "yaml one mapping, many keys", wide_map, true },   { "yaml one long scalar", long_scalar, true },
	{ "yaml largest valid set", many_schemas, false },
};

static double run(const struct shape *sh, size_t size, size_t *len, int *rc)
{
	struct doc d = { 0 };
	if (sh->make == json_nest)
		put(&d, "{\"a\": "); /* taken as JSON */
	sh->make(&d, size);
	*len = d.len;
	struct fg_fc_set *s = fg_fc_set_new();
	struct fg_errors e = { .len = 0 };
	double t0 = now_s();
	*rc = fg_fc_set_apply(s, (const uint8_t *)d.p, d.len, NULL, &e);
	double dt = now_s() - t0;
	fg_fc_set_free(s);
	free(d.p);
	return dt;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* a shape that runs long shows the ones before it */
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	size_t size = quick ? 256u << 10 : FG_CONTROL_MAX_MSG;
	printf("%-32s %10s %10s %10s %12s %s\n", "shape", "bytes", "ms", "ns/byte", "ns/B ratio", "outcome");
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		size_t len, len4;
		int rc, rc4;
		double quarter = shapes[i].scales ? run(&shapes[i], size / 4, &len4, &rc4) : 0;
		double full = run(&shapes[i], size, &len, &rc);
		double nsb = full * 1e9 / (double)len;
		char ratio[32] = "-";
		if (shapes[i].scales)
			snprintf(ratio, sizeof(ratio), "%.2f", nsb / (quarter * 1e9 / (double)len4));
		printf("%-32s %10zu %10.2f %10.1f %12s %s\n", shapes[i].name, len, full * 1e3, nsb, ratio,
		       rc >= 0 ? "accepted" : "refused");
	}
	return 0;
}
