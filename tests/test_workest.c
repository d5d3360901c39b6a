/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests: the server's work estimate (Kubernetes' estimators, hostile
 * hints bounded), source prefixes and the trust boundary. */
#include <arpa/inet.h>
#include <stdlib.h>

#include "flowcontrol.h"
#include "settings.h"
#include "test.h"
#include "trust.h"
#include "workest.h"

#define MS 1000000ull

static struct fg_work est(const char *verb, uint32_t work_hint, uint32_t level_cap)
{
	struct fg_hdr h = { .work_hint = work_hint };
	struct fg_work w;
	fg_work_estimate(fg_str_of(verb), &h, true, level_cap, 1000 * MS, &w);
	return w;
}

/* Kubernetes' estimators (docs/apf-facts.md §5.4 count-based, §5.5), as a table. */
TEST(kubernetes_estimates)
{
	static const struct {
		const char *verb;
		uint32_t hint, cap;
		uint16_t initial, final;
		uint64_t extra_ns;
	} cases[] = {
		{ "get", 0, 0, 1, 0, 0 },
		{ "get", 5000, 0, 1, 0, 0 },          /* only LIST and mutating verbs use the hint */
		{ NULL, 5000, 0, 1, 0, 0 },           /* no verb: one seat */
		{ "list", 0, 0, 1, 0, 0 },
		{ "list", 100, 0, 1, 0, 0 },
		{ "list", 101, 0, 2, 0, 0 },
		{ "list", 450, 0, 5, 0, 0 },
		{ "list", 100000, 0, 10, 0, 0 },      /* MaximumListSeatsLimit */
		{ "list", 100000, 3, 3, 0, 0 },       /* the level's maxSeats */
		{ "watch", 250, 0, 3, 0, 0 },
		{ "create", 9, 0, 1, 0, 0 },          /* fewer than watchesPerSeat: no final work */
		{ "create", 10, 0, 1, 1, 5 * MS },
		{ "update", 25, 0, 1, 3, 5 * MS },
		{ "patch", 250, 0, 1, 10, 12500000 }, /* 25 seats of 5 ms over the cap of 10: 12.5 ms */
		{ "delete", 250, 5, 1, 5, 25 * MS },
		{ "delete", 4000000000u, 0, 1, 10, 1000 * MS }, /* capped by maxExtraLatency */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fg_work w = est(cases[i].verb, cases[i].hint, cases[i].cap);
		if (w.initial_seats != cases[i].initial || w.final_seats != cases[i].final ||
		    w.extra_latency_ns != cases[i].extra_ns)
			fprintf(stderr, "  case %zu (%s %u cap %u): got %u/%u/%llu\n", i, cases[i].verb ? cases[i].verb : "-",
				cases[i].hint, cases[i].cap, w.initial_seats, w.final_seats,
				(unsigned long long)w.extra_latency_ns);
		CHECK_EQ(w.initial_seats, cases[i].initial);
		CHECK_EQ(w.final_seats, cases[i].final);
		CHECK_EQ(w.extra_latency_ns, cases[i].extra_ns);
	}
}

/* The most a header can ask for, on every level type's cap. */
TEST(hostile_hints_stay_inside_the_bounds)
{
	struct fg_hdr h = { .seats = 65535, .final_seats = 65535, .work_hint = UINT32_MAX,
			    .extra_latency_us = UINT32_MAX };
	const uint32_t caps[] = { 0, 1, 2, 10, 13, 1000 };
	const char *verbs[] = { "get", "list", "create", "x", NULL };
	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++)
		for (size_t v = 0; v < sizeof(verbs) / sizeof(verbs[0]); v++) {
			struct fg_work w;
			fg_work_estimate(fg_str_of(verbs[v]), &h, true, caps[c], 250 * MS, &w);
			uint32_t cap = caps[c] && caps[c] < FG_WORK_MAX_SEATS ? caps[c] : FG_WORK_MAX_SEATS;
			CHECK_EQ(w.initial_seats, cap);
			CHECK_EQ(w.final_seats, cap);
			CHECK_EQ(w.extra_latency_ns, 250 * MS);
		}
	/* Hints choose inside the bounds: fewer seats, no final work. */
	struct fg_hdr small = { .seats = 2, .final_seats = 0, .extra_latency_us = 0, .work_hint = 1000 };
	struct fg_work w;
	fg_work_estimate(fg_str_of("list"), &small, true, 0, 250 * MS, &w);
	CHECK_EQ(w.initial_seats, 2);
	/* Final seats without extra latency hold nothing after the answer. */
	struct fg_hdr nolat = { .final_seats = 5 };
	fg_work_estimate(fg_str_of("get"), &nolat, true, 0, 250 * MS, &w);
	CHECK_EQ(w.final_seats, 0);
	CHECK_EQ(w.extra_latency_ns, 0);
	/* maxExtraLatency 0: nothing lingers. */
	fg_work_estimate(fg_str_of("create"), &h, true, 0, 0, &w);
	CHECK_EQ(w.final_seats, 0);
	CHECK_EQ(w.extra_latency_ns, 0);
	/* From an untrusted source nothing of it counts: one seat. */
	for (size_t v = 0; v < sizeof(verbs) / sizeof(verbs[0]); v++) {
		fg_work_estimate(fg_str_of(verbs[v]), &h, false, 1000, 250 * MS, &w);
		CHECK_EQ(w.initial_seats, 1);
		CHECK_EQ(w.final_seats, 0);
		CHECK_EQ(w.extra_latency_ns, 0);
	}
}

/* Every level type gets a per-request cap from compilation. */
TEST(every_level_type_is_capped)
{
	struct fg_fc_set *set = fg_fc_set_bootstrap();
	struct fg_errors e = { .len = 0 };
	struct fg_fc_config *c = fg_fc_compile(set, 600, &e);
	CHECK(c != NULL);
	for (uint32_t i = 0; c && i < c->n_levels; i++) {
		const struct fg_fc_level *l = &c->levels[i];
		CHECK(l->max_seats >= 1);
		if (l->exempt)
			CHECK_EQ(l->max_seats, FG_EXEMPT_MAX_SEATS);
		else if (l->reject)
			CHECK(l->max_seats <= l->nominal && l->max_seats <= FG_WORK_MAX_SEATS);
	}
	fg_fc_config_free(c);
	fg_fc_set_free(set);
}

TEST(cidr_parse)
{
	struct fg_cidr c;
	char buf[32];
	CHECK_EQ(fg_cidr_parse("10.0.0.0/8", &c), 0);
	CHECK_STR(fg_cidr_format(&c, buf, sizeof(buf)), "10.0.0.0/8");
	CHECK(fg_cidr_contains(&c, inet_addr("10.255.1.2")));
	CHECK(!fg_cidr_contains(&c, inet_addr("11.0.0.1")));
	CHECK_EQ(fg_cidr_parse("192.0.2.7", &c), 0);
	CHECK_STR(fg_cidr_format(&c, buf, sizeof(buf)), "192.0.2.7/32");
	CHECK_EQ(fg_cidr_parse("0.0.0.0/0", &c), 0);
	CHECK(fg_cidr_contains(&c, inet_addr("203.0.113.9")));
	const char *bad[] = { "", "/8", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/+8", "10.1.2.3/8",
			      "10.0.0/8", "10.0.0.0/8x", "a.b.c.d/8", "10.0.0.0/08000000000000000000", "::1/128" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (fg_cidr_parse(bad[i], &c) == 0)
			fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
		CHECK(fg_cidr_parse(bad[i], &c) != 0);
	}
}

static struct fg_fc_request claim_masters(void)
{
	static const struct fg_str groups[2] = { { "system:masters", 14 }, { "system:authenticated", 20 } };
	return (struct fg_fc_request){ .user = { "admin", 5 }, .groups = groups, .n_groups = 2 };
}

TEST(untrusted_sources_get_their_mapped_identity_or_anonymous)
{
	struct fg_settings s;
	struct fg_errors e = { .len = 0 };
	fg_settings_defaults(&s);
	const char *json = "{\"apiVersion\":\"fairgate.dev/v1alpha1\",\"kind\":\"FairgateSettings\",\"spec\":{"
			   "\"trustedSources\":[\"127.0.0.0/8\",\"10.1.0.0/16\"],"
			   "\"sourceIdentities\":[{\"cidr\":\"192.0.2.0/24\",\"user\":\"tenant-a\","
			   "\"groups\":[\"system:authenticated\",\"tenants\"]}]}}";
	CHECK_EQ(fg_settings_apply_json(&s, (const uint8_t *)json, strlen(json), &e), 0);
	struct fg_trust *t = malloc(sizeof(*t));
	fg_trust_init(t, &s);
	CHECK(fg_trust_source(t, inet_addr("127.0.0.1")));
	CHECK(fg_trust_source(t, inet_addr("10.1.9.9")));
	CHECK(!fg_trust_source(t, inet_addr("10.2.0.1")));

	struct fg_fc_request r = claim_masters();
	fg_trust_assign_identity(t, inet_addr("192.0.2.44"), &r);
	CHECK(r.user.len == 8 && !memcmp(r.user.ptr, "tenant-a", 8));
	CHECK_EQ(r.n_groups, 2);
	CHECK(r.groups[1].len == 7 && !memcmp(r.groups[1].ptr, "tenants", 7));

	r = claim_masters();
	fg_trust_assign_identity(t, inet_addr("203.0.113.5"), &r);
	CHECK(r.user.len == strlen(FG_ANONYMOUS_USER) && !memcmp(r.user.ptr, FG_ANONYMOUS_USER, r.user.len));
	CHECK_EQ(r.n_groups, 1);
	CHECK(r.groups[0].len == strlen(FG_UNAUTHENTICATED_GROUP));

	/* Classified by the bootstrap schemas: the claim of system:masters
	 * lands in exempt only from a trusted source. */
	struct fg_fc_set *set = fg_fc_set_bootstrap();
	struct fg_fc_config *c = fg_fc_compile(set, 600, &e);
	struct fg_fc_match m;
	r = claim_masters();
	fg_fc_classify(c, &r, &m);
	CHECK_STR(c->levels[m.level].name, "exempt");
	fg_trust_assign_identity(t, inet_addr("203.0.113.5"), &r);
	fg_fc_classify(c, &r, &m);
	CHECK(strcmp(c->levels[m.level].name, "exempt") != 0);
	CHECK_STR(c->levels[m.level].name, "global-default"); /* as Kubernetes treats system:unauthenticated */
	fg_fc_config_free(c);
	fg_fc_set_free(set);
	free(t);
}

TEST(trust_settings_are_validated_with_their_paths)
{
	static const struct {
		const char *spec, *error;
	} cases[] = {
		{ "\"trustedSources\":\"127.0.0.0/8\"", "spec.trustedSources: must be a list" },
		{ "\"trustedSources\":[\"10.1.2.3/8\"]", "spec.trustedSources[0]: invalid prefix" },
		{ "\"trustedSources\":[1]", "spec.trustedSources[0]: must be a string" },
		{ "\"sourceIdentities\":[{\"cidr\":\"10.0.0.0/8\"}]", "spec.sourceIdentities[0].user: must be a string" },
		{ "\"sourceIdentities\":[{\"cidr\":\"10.0.0.0/33\",\"user\":\"u\"}]", "spec.sourceIdentities[0].cidr" },
		{ "\"sourceIdentities\":[{\"cidr\":\"10.0.0.0/8\",\"user\":\"u\",\"grups\":[]}]",
		  "spec.sourceIdentities[0].grups: unknown field" },
		{ "\"sourceIdentities\":[{\"cidr\":\"10.0.0.0/8\",\"user\":\"u\",\"groups\":[\"\"]}]",
		  "spec.sourceIdentities[0].groups[0]: must be a string of 1..127 bytes" },
		{ "\"sourceIdentities\":[{\"cidr\":\"10.0.0.0/8\",\"user\":\"u\",\"groups\":[\"1\",\"2\",\"3\",\"4\",\"5\","
		  "\"6\",\"7\",\"8\",\"9\"]}]", "spec.sourceIdentities[0].groups: must be a list of at most 8" },
		{ "\"addressValidation\":\"some\"", "spec.addressValidation: must be \"off\", \"untrusted\" or \"all\"" },
		{ "\"maxExtraLatency\":\"61s\"", "spec.maxExtraLatency: must be at most 60s" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char json[1024];
		snprintf(json, sizeof(json), "{\"apiVersion\":\"fairgate.dev/v1alpha1\",\"kind\":\"FairgateSettings\","
			 "\"spec\":{%s}}", cases[i].spec);
		struct fg_settings s, before;
		struct fg_errors e = { .len = 0 };
		fg_settings_defaults(&s);
		before = s;
		CHECK_EQ(fg_settings_apply_json(&s, (const uint8_t *)json, strlen(json), &e), -22);
		if (!strstr(e.text, cases[i].error))
			fprintf(stderr, "  case %zu: \"%s\" not in: %s", i, cases[i].error, e.text);
		CHECK(strstr(e.text, cases[i].error) != NULL);
		CHECK(!memcmp(&s, &before, sizeof(s))); /* nothing changed */
	}
}

TEST_MAIN
