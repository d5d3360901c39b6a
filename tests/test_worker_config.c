/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of one worker following configurations (dataplane/worker_config.c,
 * worker_board.c): hundreds of levels renamed while the old ones drain, a
 * configuration that does not fit or whose level cannot be prepared (nothing
 * changes), and a new current limit from borrowing followed at the next poll.
 * Rig: worker_rig.h. */
#include <errno.h>
#include <stdlib.h>

#include "test.h"
#include "worker_rig.h"

/* n Queue levels "prefix-i", each reached by user "prefix-i" alone. */
static struct fg_fc_config *levels_named(const char *prefix, unsigned n)
{
	size_t cap = 1024 + (size_t)n * 1024, len = 0;
	char *text = malloc(cap);
	len += (size_t)snprintf(text + len, cap - len, "{\"kind\":\"List\",\"items\":[");
	for (unsigned i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, cap - len, "%s"
			"{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"PriorityLevelConfiguration\","
			"\"metadata\":{\"name\":\"%s-%u\"},\"spec\":{\"type\":\"Limited\",\"limited\":{"
			"\"nominalConcurrencyShares\":1,\"limitResponse\":{\"type\":\"Queue\",\"queuing\":{\"queues\":4,"
			"\"handSize\":1,\"queueLengthLimit\":10}}}}},"
			"{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\",\"metadata\":{\"name\":"
			"\"%s-%u\"},\"spec\":{\"priorityLevelConfiguration\":{\"name\":\"%s-%u\"},\"matchingPrecedence\":500,"
			"\"rules\":[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"%s-%u\"}}],\"resourceRules\":[{"
			"\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"clusterScope\":true,"
			"\"namespaces\":[\"*\"]}]}]}}", i ? "," : "", prefix, i, prefix, i, prefix, i, prefix, i);
	snprintf(text + len, cap - len, "]}");
	struct fg_fc_set *set = fg_fc_set_new();
	struct fg_errors e = { .len = 0 };
	CHECK_EQ(fg_fc_set_apply(set, (const uint8_t *)text, strlen(text), NULL, &e), 2 * n);
	struct fg_fc_config *fc = fg_fc_compile(set, 100 * n, &e);
	fg_fc_set_free(set);
	free(text);
	return fc;
}

/* Hundreds of levels renamed while the old ones drain: a configuration that
 * does not fit the worker's slots is not half-followed; the worker refuses
 * requests (and says why) until one fits, then follows it. */
TEST(configuration_churn_and_a_configuration_that_cannot_be_followed)
{
	struct rig r;
	rig_init(&r, 4, 10, 1);
	unsigned n = FG_MAX_CONFIG_LEVELS - 2; /* + exempt and catch-all */
	const char *names[3] = { "a", "b", "c" };
	struct fg_fc_config *fcs[3];
	for (int g = 0; g < 3; g++)
		fcs[g] = levels_named(names[g], n);
	uint64_t id = 1;
	for (int g = 0; g < 2; g++) {
		/* Follow generation g and leave a request executing in each level. */
		rig_set_fc(&r, fcs[g]);
		step(&r);
		CHECK_EQ(r.w.stats.config_error, 0);
		CHECK_EQ(r.w.config_generation, r.cfg->generation);
		for (unsigned i = 0; i < n; i++) {
			char user[32];
			snprintf(user, sizeof(user), "%s-%u", names[g], i);
			send_request(&r, 0, id++, user, 1);
			step(&r);
		}
	}
	CHECK_EQ(r.w.stats.executing, 2 * n);
	/* a-* and b-* hold requests: the c-* levels find no free slots. */
	rig_set_fc(&r, fcs[2]);
	step(&r);
	CHECK_EQ(r.w.stats.config_error, ENOSPC);
	CHECK(r.w.config_generation != r.cfg->generation);
	send_request(&r, 0, id++, "c-0", 1);
	step(&r);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_CONCURRENCY_LIMIT], 1);
	CHECK_EQ(r.w.stats.executing, 2 * n); /* nothing of the old levels was touched */
	/* Answer everything: the old levels drain, and the next poll follows. */
	struct fg_msg m;
	struct fg_endpoint to;
	while (next_sent(&r, &m, &to))
		if (m.hdr.type == FG_MSG_REQUEST)
			respond_from(&r, 0, m.hdr.request_id, "ok");
	while (r.io.rx_head != r.io.rx_tail)
		step(&r);
	step(&r);
	CHECK_EQ(r.w.stats.responded, 2 * n);
	CHECK_EQ(r.w.stats.config_error, 0);
	CHECK_EQ(r.w.config_generation, r.cfg->generation);
	send_request(&r, 0, id++, "c-7", 1);
	step(&r);
	CHECK_EQ(r.w.stats.executing, 1);
	fg_worker_abort_executing(&r.w, r.cfg, r.now);
	check_invariant(&r);
	rig_fini(&r);
}

/* A configuration one of whose levels cannot be prepared (here a hand larger
 * than the dealer deals), after an existing level's reconfiguration and a new
 * level were already prepared: everything prepared is given up, nothing of
 * the worker changes, and the refusal is reported. */
TEST(a_level_that_cannot_be_prepared_changes_nothing)
{
	struct rig r;
	rig_init(&r, 4, 10, 1);
	struct fg_fc_config *a = levels_named("a", 3), *b = levels_named("a", 5);
	rig_set_fc(&r, a);
	step(&r);
	CHECK_EQ(r.w.config_generation, r.cfg->generation);
	/* In b: a-0..a-2 exist (reconfigured: other limits), a-3 and a-4 are new;
	 * the second new one in preparation order cannot be dealt. */
	unsigned fresh = 0;
	for (uint32_t i = 0; i < b->n_levels; i++)
		if (!strcmp(b->levels[i].name, "a-3") || !strcmp(b->levels[i].name, "a-4"))
			if (++fresh == 2)
				b->levels[i].hand_size = FG_DEALER_MAX_HAND + 1;
	uint32_t n_levels = r.w.n_levels, used = 0;
	struct fg_qs_config before[FG_MAX_LEVELS];
	for (uint32_t k = 0; k < r.w.n_levels; k++) {
		used += r.w.levels[k].used;
		before[k] = r.w.levels[k].qs.cfg;
	}
	uint64_t followed = r.w.config_generation;
	rig_set_fc(&r, b);
	step(&r);
	CHECK_EQ(r.w.stats.config_error, EINVAL);
	CHECK_EQ(r.w.config_generation, followed);
	CHECK_EQ(r.w.n_levels, n_levels);
	uint32_t used_after = 0;
	for (uint32_t k = 0; k < r.w.n_levels; k++) {
		if (!r.w.levels[k].used)
			continue; /* a free slot a new level was prepared in, and given back */
		used_after++;
		CHECK_EQ(r.w.levels[k].qs.cfg.queues, before[k].queues);
		CHECK_EQ(r.w.levels[k].qs.level_limit, before[k].concurrency_limit);
	}
	CHECK_EQ(used_after, used);
	rig_fini(&r);
}

/* One worker: a new current limit published in the configuration is
 * followed at the next poll — more seats dispatch at once, fewer stop
 * dispatching until the level drains below them — and the width cap follows. */
TEST(borrowed_limit_followed_at_the_next_poll)
{
	struct rig r;
	rig_init(&r, 2, 50, 1);
	uint32_t k = (uint32_t)fg_fc_level_index(r.cfg->fc, "pl");
	CHECK(r.cfg->limits != NULL); /* one worker: fg_config_build gave the levels their current limits */
	char user[16];
	for (uint64_t id = 1; id <= 12; id++) {
		snprintf(user, sizeof(user), "u%u", (unsigned)id);
		send_request(&r, 0, id, user, 1);
	}
	step(&r);
	CHECK_EQ(pl_qs(&r.w)->seats_in_use, 2);
	/* Borrowed: 6 seats, at the next poll. */
	fg_config_set_level_limit(r.cfg, k, 6);
	r.cfg->limits->seq++;
	step(&r);
	CHECK_EQ(pl_qs(&r.w)->seats_in_use, 6);
	CHECK_EQ(pl_qs(&r.w)->level_limit, 6);
	CHECK_EQ(r.w.stats.levels[r.w.level_of_cfg[k]].limit, 6);
	/* Lent back: 3 seats; nothing dispatches until fewer than 3 are in use. */
	fg_config_set_level_limit(r.cfg, k, 3);
	r.cfg->limits->seq++;
	step(&r);
	struct fg_msg m;
	struct fg_endpoint to;
	uint64_t ids[32];
	unsigned n = 0;
	while (next_sent(&r, &m, &to))
		if (m.hdr.type == FG_MSG_REQUEST)
			ids[n++] = m.hdr.request_id;
	CHECK_EQ(n, 6);
	uint32_t peak_after = 0;
	for (unsigned i = 0; i < n; i++) {
		respond_from(&r, 0, ids[i], "ok");
		step(&r);
		uint32_t used = pl_qs(&r.w)->seats_in_use;
		CHECK(used <= 6 - i - 1 || used <= 3); /* never grows back while above the limit */
		if (i >= 3)
			peak_after = used > peak_after ? used : peak_after;
	}
	CHECK_EQ(peak_after, 3); /* and refills to the new limit once below it */
	CHECK_EQ(pl_qs(&r.w)->level_limit, 3);
	/* A stale sequence is not followed again: the queue set keeps its limit. */
	r.cfg->limits->current[k] = 9;
	step(&r);
	CHECK_EQ(pl_qs(&r.w)->cfg.concurrency_limit, 3);
	/* Drain. */
	for (int round = 0; round < 50 && (pl_qs(&r.w)->seats_in_use || r.w.stats.waiting); round++) {
		while (next_sent(&r, &m, &to))
			if (m.hdr.type == FG_MSG_REQUEST)
				respond_from(&r, 0, m.hdr.request_id, "ok");
		step(&r);
	}
	CHECK_EQ(r.w.stats.responded, 12);
	check_invariant(&r);
	rig_fini(&r);
}

TEST_MAIN
