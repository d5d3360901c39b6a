/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_classify — the configuration path's costs:
 *  - classification ns/request with the bootstrap objects and with 1,000 and
 *    10,000 extra FlowSchemas that match nothing, ahead of the real ones
 *    (the linear walk's worst case: every request would test all of them;
 *    the subject index skips them);
 *  - validation + compilation of 1,000 schemas (the control thread's work
 *    per apply) and compilation alone of 10,000;
 *  - a worker following a new configuration (fg_worker_configure with the
 *    bootstrap levels): the only pause the fast path sees, inside one poll
 *    iteration.
 *
 * A set holds at most FG_FC_MAX_OBJECTS objects, fewer than 10,000: the
 * 10,000 schemas are validated in sets of 2,500 and put together in one set
 * through the module's private header, to see how far past the limit the
 * classifier and the compiler stay flat.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "flowcontrol.h"
#include "flowcontrol_int.h"
#include "settings.h"
#include "worker.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double classify_ns(const struct fg_fc_config *c, unsigned iters)
{
	struct fg_str groups[2] = { { "system:authenticated", 20 }, { "team-a", 6 } };
	const char *users[4] = { "alice", "bob", "system:serviceaccount:ns1:app", "carol" };
	struct fg_fc_match m;
	uint64_t sink = 0;
	double t0 = now_s();
	for (unsigned i = 0; i < iters; i++) {
		struct fg_fc_request r = { .user = fg_str_of(users[i & 3]), .ns = { "ns1", 3 }, .verb = { "list", 4 },
					   .api_group = { "apps", 4 }, .resource = { "deployments", 11 },
					   .subresource = { "", 0 }, .groups = groups, .n_groups = 2 };
		fg_fc_classify(c, &r, &m);
		sink += m.flow_hash;
	}
	double ns = (now_s() - t0) * 1e9 / iters;
	if (sink == 42)
		printf("#");
	return ns;
}

/* Schemas team-<first>...team-<first + n - 1>, each for a group of its own. */
static char *many_schemas(unsigned first, unsigned n)
{
	size_t cap = (size_t)n * 512 + 1024, len = 0;
	char *buf = malloc(cap);
	len += (size_t)snprintf(buf + len, cap - len, "{\"kind\":\"List\",\"items\":[");
	for (unsigned i = first; i < first + n; i++)
		len += (size_t)snprintf(buf + len, cap - len,
			"%s{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\","
			"\"metadata\":{\"name\":\"team-%05u\"},\"spec\":{\"priorityLevelConfiguration\":{\"name\":\"workload-low\"},"
			"\"matchingPrecedence\":%u,\"distinguisherMethod\":{\"type\":\"ByNamespace\"},\"rules\":[{\"subjects\":"
			"[{\"kind\":\"Group\",\"group\":{\"name\":\"group-%05u\"}}],\"resourceRules\":[{\"verbs\":[\"get\",\"list\"],"
			"\"apiGroups\":[\"apps\"],\"resources\":[\"deployments\"],\"namespaces\":[\"team-%05u\"]}]}]}}",
			i > first ? "," : "", i, 10 + i % 80, i, i);
	snprintf(buf + len, cap - len, "]}");
	return buf;
}

/* The bootstrap objects and n more schemas, validated in sets of at most
 * 2,500 (FG_FC_MAX_OBJECTS) and put together; NULL if one was refused. */
static struct fg_fc_set *bootstrap_plus(const struct fg_fc_set *boot, unsigned n)
{
	struct fg_fc_set *all = fg_fc_set_copy(boot);
	for (unsigned first = 0; all && first < n; first += 2500) {
		unsigned k = n - first < 2500 ? n - first : 2500;
		struct fg_errors e = { .len = 0 };
		struct fg_fc_set *part = fg_fc_set_new();
		char *text = many_schemas(first, k);
		if (fg_fc_set_apply(part, (const uint8_t *)text, strlen(text), NULL, &e) != (int)k) {
			fprintf(stderr, "bench_classify: schemas %u.. were refused:\n%s", first, e.text);
			fg_fc_set_free(all);
			all = NULL;
		} else {
			json_object_update(fg_fc__table(all, FG_FC_FLOWSCHEMA), fg_fc__table(part, FG_FC_FLOWSCHEMA));
		}
		fg_fc_set_free(part);
		free(text);
	}
	return all;
}

static unsigned fake_rx(void *c, struct fg_pkt *p, unsigned m) { (void)c; (void)p; (void)m; return 0; }
static void fake_tx(void *c, struct fg_pkt *p) { (void)c; (void)p; }
static unsigned fake_flush(void *c, unsigned *answers) { (void)c; *answers = 0; return 0; }
static int fake_alloc(void *c, struct fg_pkt *p) { (void)c; (void)p; return -1; }
static uint64_t fake_in_use(void *c) { (void)c; return 0; }
static const struct fg_io_ops no_io = { .rx = fake_rx, .tx = fake_tx, .flush = fake_flush, .alloc = fake_alloc,
					.free = fake_tx, .in_use = fake_in_use };

int main(int argc, char **argv)
{
	unsigned iters = argc > 1 && !strcmp(argv[1], "--quick") ? 200000 : 2000000;
	struct fg_errors e = { .len = 0 };
	struct fg_fc_set *boot = fg_fc_set_bootstrap();
	struct fg_fc_config *c0 = fg_fc_compile(boot, 600, &e);
	double boot_ns = classify_ns(c0, iters);

	char *text = many_schemas(0, 1000);
	struct fg_fc_set *big = fg_fc_set_copy(boot);
	double t0 = now_s();
	int n = fg_fc_set_apply(big, (const uint8_t *)text, strlen(text), NULL, &e);
	struct fg_fc_config *c1 = fg_fc_compile(big, 600, &e);
	double compile_ms = (now_s() - t0) * 1e3;
	if (n != 1000 || !c1) {
		fprintf(stderr, "bench_classify: the 1,000-schema configuration was refused:\n%s", e.text);
		return 1;
	}
	double big_ns = classify_ns(c1, iters);

	struct fg_fc_set *huge = bootstrap_plus(boot, 10000);
	if (!huge)
		return 1;
	t0 = now_s();
	struct fg_fc_config *c2 = fg_fc_compile(huge, 600, &e);
	double compile10k_ms = (now_s() - t0) * 1e3;
	if (!c2 || c2->n_schemas != 10000 + c0->n_schemas) {
		fprintf(stderr, "bench_classify: the 10,000-schema configuration did not compile:\n%s", e.text);
		return 1;
	}
	double huge_ns = classify_ns(c2, iters);

	/* The two configurations the worker follows in turn, as the daemon
	 * builds them (default settings, 600 seats), each with its objects; no
	 * per (level, schema) metrics, as the figures in benchmarks.md were
	 * measured. */
	struct fg_settings s;
	fg_settings_defaults(&s);
	s.seat_limit = 600;
	s.flowcontrol_metrics = false;
	struct fg_config *cfgs[2] = { fg_config_build(&s, c0, 1), fg_config_build(&s, c1, 2) };
	if (!cfgs[0] || !cfgs[1]) {
		fprintf(stderr, "bench_classify: out of memory\n");
		return 1;
	}
	struct fg_worker *w = calloc(1, sizeof(*w));
	fg_worker_init(w, 0, (struct fg_io){ &no_io, NULL }, 1024);
	fg_worker_configure(w, cfgs[0], 0);
	double worst = 0;
	for (int k = 0; k < 20; k++) {
		struct fg_config *cfg = cfgs[k & 1 ? 0 : 1];
		cfg->generation = (uint64_t)k + 2;
		double a = now_s();
		fg_worker_configure(w, cfg, (uint64_t)k);
		double dt = (now_s() - a) * 1e6;
		if (dt > worst)
			worst = dt;
	}
	printf("classification, bootstrap objects (11 schemas):  %8.1f ns/request\n", boot_ns);
	printf("classification, 1,000 more schemas ahead:         %8.1f ns/request (%.2fx bootstrap)\n", big_ns,
	       big_ns / boot_ns);
	printf("classification, 10,000 more schemas ahead:        %8.1f ns/request (%.2fx bootstrap)\n", huge_ns,
	       huge_ns / boot_ns);
	printf("validate + compile 1,000 schemas:                 %8.2f ms\n", compile_ms);
	printf("compile 10,000 schemas:                           %8.2f ms\n", compile10k_ms);
	printf("worker follows a new configuration (8 levels):    %8.1f us, worst of 20\n", worst);
	fg_worker_fini(w);
	free(w);
	fg_config_free(cfgs[0]); /* and c0 */
	fg_config_free(cfgs[1]); /* and c1 */
	fg_fc_config_free(c2);
	fg_fc_set_free(boot);
	fg_fc_set_free(big);
	fg_fc_set_free(huge);
	free(text);
	return 0;
}
