/* SPDX-License-Identifier: Apache-2.0 */
/* telemetry — fairgate's commands on DPDK's telemetry socket; see telemetry.h. */
#include "telemetry.h"

#include <errno.h>
#include <rte_telemetry.h>
#include <stdio.h>
#include <stdlib.h>

static struct {
	struct fg_worker_stats *const *stats;
	unsigned n;
} tel;

static int add_level(struct rte_tel_data *dict, unsigned i, const struct fg_level_total *t)
{
	struct rte_tel_data *o = rte_tel_data_alloc();
	if (!o)
		return -ENOMEM;
	rte_tel_data_start_dict(o);
	rte_tel_data_add_dict_string(o, "name", t->name);
	rte_tel_data_add_dict_u64(o, "seats_in_use", t->seats_in_use);
	rte_tel_data_add_dict_u64(o, "limit", t->limit);
	rte_tel_data_add_dict_u64(o, "queues", t->queues);
	rte_tel_data_add_dict_u64(o, "waiting", t->waiting);
	rte_tel_data_add_dict_u64(o, "executing", t->executing);
	rte_tel_data_add_dict_u64(o, "received", t->received);
	rte_tel_data_add_dict_u64(o, "dispatched", t->dispatched);
	rte_tel_data_add_dict_u64(o, "responded", t->responded);
	rte_tel_data_add_dict_u64(o, "rejected", t->rejected);
	char key[16]; /* telemetry keys allow no '-' or '.': the name is a value */
	snprintf(key, sizeof(key), "%u", i);
	return rte_tel_data_add_dict_container(dict, key, o, 0);
}

static int cmd_levels(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	(void)params;
	struct fg_level_total *t = calloc(FG_MAX_LEVELS, sizeof(*t));
	if (!t)
		return -ENOMEM;
	unsigned n = fg_stats_levels_total(tel.stats, tel.n, t, FG_MAX_LEVELS);
	rte_tel_data_start_dict(d); /* DPDK 22.11 nests dicts in dicts, not in arrays */
	int rc = 0;
	for (unsigned i = 0; i < n && !rc; i++)
		rc = add_level(d, i, &t[i]);
	free(t);
	return rc;
}

static int cmd_workers(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d); /* by worker number */
	for (unsigned w = 0; w < tel.n; w++) {
		const struct fg_worker_stats *s = tel.stats[w];
		struct rte_tel_data *o = rte_tel_data_alloc();
		if (!o)
			return -ENOMEM;
		rte_tel_data_start_dict(o);
		rte_tel_data_add_dict_u64(o, "worker", w);
		rte_tel_data_add_dict_u64(o, "datagrams_received", FG_STAT_GET(s->rx_datagrams));
		rte_tel_data_add_dict_u64(o, "requests_received", FG_STAT_GET(s->received));
		rte_tel_data_add_dict_u64(o, "answers_forwarded", FG_STAT_GET(s->answers_forwarded));
		rte_tel_data_add_dict_u64(o, "handoff_refused", FG_STAT_GET(s->handoff_refused));
		rte_tel_data_add_dict_u64(o, "allotment_changes", FG_STAT_GET(s->allotment_changes));
		rte_tel_data_add_dict_u64(o, "config_generation", FG_STAT_GET(s->config_generation));
		rte_tel_data_add_dict_u64(o, "config_error", FG_STAT_GET(s->config_error));
		rte_tel_data_add_dict_u64(o, "busy_ppm", FG_STAT_GET(s->busy_ppm)); /* busy polls, last second */
		char key[16];
		snprintf(key, sizeof(key), "%u", w);
		if (rte_tel_data_add_dict_container(d, key, o, 0))
			return -ENOSPC;
	}
	return 0;
}

static int cmd_counters(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	(void)params;
	struct fg_worker_totals t;
	fg_stats_totals(tel.stats, tel.n, &t);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "datagrams_received", t.rx_datagrams);
	rte_tel_data_add_dict_u64(d, "requests_received", t.received);
	rte_tel_data_add_dict_u64(d, "dispatched", t.dispatched);
	rte_tel_data_add_dict_u64(d, "responded", t.responded);
	rte_tel_data_add_dict_u64(d, "rejected", t.rejected_total);
	rte_tel_data_add_dict_u64(d, "malformed", t.rx_malformed);
	rte_tel_data_add_dict_u64(d, "untrusted_requests", t.untrusted_requests);
	rte_tel_data_add_dict_u64(d, "cookie_challenges", t.cookie_challenges);
	rte_tel_data_add_dict_u64(d, "answers_lost", t.answers_lost);
	return 0;
}

int fg_telemetry_register(struct fg_worker_stats *const *stats, unsigned n_workers)
{
	tel.stats = stats;
	tel.n = n_workers;
	int rc = rte_telemetry_register_cmd("/fairgate/levels", cmd_levels,
					    "Priority levels summed over workers: seats, limit, queues, waiting, ...");
	if (!rc)
		rc = rte_telemetry_register_cmd("/fairgate/workers", cmd_workers,
						"Per worker: datagrams, requests, answers forwarded, allotment, configuration");
	if (!rc)
		rc = rte_telemetry_register_cmd("/fairgate/counters", cmd_counters, "fairgate's totals");
	return rc;
}
