/* SPDX-License-Identifier: Apache-2.0 */
/* test_runseries — the run scenario's plan (steps, ramps, phases) and the
 * run series fed with recorded loadgen lines (docs/bench.md's contract) and
 * status samples: bins, totals, merged histograms, estimated seats. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runseries.h"
#include "scenario.h"
#include "test.h"

static struct fg_scenario *load(const char *text)
{
	char err[512];
	struct fg_scenario *s = fg_scenario_load((const uint8_t *)text, strlen(text), err, sizeof(err));
	if (!s)
		fprintf(stderr, "  load: %s\n", err);
	return s;
}

static const char *const two_flows = "name: t\n"
				     "duration: 4s\n"
				     "backends: {count: 2, capacity: 4, serviceTime: 20ms}\n"
				     "flows:\n"
				     "  - {name: heavy, threads: 10, width: 2}\n"
				     "  - name: light\n"
				     "    phases:\n"
				     "      - {start: 0s, stop: 2s, rate: 10}\n"
				     "      - {start: 2s, stop: 4s, rate: 10, rampTo: 30}\n"
				     "events:\n"
				     "  - {at: 1s, action: pause, backend: 1, for: 500ms}\n";

TEST(plan_steps_ramps_and_phases)
{
	struct fg_scenario *s = load(two_flows);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_EQ(s->seat_limit, 8u); /* count x capacity */
	CHECK_EQ(s->flows[0].n_steps, 1u);
	CHECK_EQ(s->flows[0].steps[0].threads, 10u);
	CHECK(fabs(fg_scn_step_demand(s, &s->flows[0], &s->flows[0].steps[0]) - 20.0) < 1e-9);
	/* The 2 s ramp: two 1 s steps at the rates of their middles. */
	CHECK_EQ(s->flows[1].n_steps, 3u);
	CHECK(fabs(s->flows[1].steps[1].rate - 15.0) < 1e-9 && fabs(s->flows[1].steps[2].rate - 25.0) < 1e-9);
	CHECK_EQ(s->flows[1].steps[2].start_ns, 3000000000LL);
	CHECK(fabs(fg_scn_step_demand(s, &s->flows[1], &s->flows[1].steps[0]) - 0.2) < 1e-9); /* 10/s x 20 ms */
	/* The pause's resume is an event of its own, in time order. */
	CHECK_EQ(s->n_events, 2u);
	CHECK(s->events[0].action == FG_SCN_PAUSE && s->events[1].action == FG_SCN_RESUME &&
	      s->events[1].at_ns == 1500000000LL);
	int64_t b[FG_SCN_MAX_PHASES];
	unsigned n = fg_scn_phases(s, b, FG_SCN_MAX_PHASES);
	int64_t want[] = { 0, 1000000000LL, 1500000000LL, 2000000000LL, 3000000000LL, 4000000000LL };
	CHECK_EQ(n, 6u);
	for (unsigned i = 0; i < n && i < 6; i++)
		CHECK_EQ(b[i], want[i]);
	CHECK(fg_scn_step_at(&s->flows[1], 2500000000LL) == &s->flows[1].steps[1]);
	CHECK(fg_scn_step_at(&s->flows[1], 4000000000LL) == NULL);
	fg_scenario_free(s);
}

/* set-backend: its service time and capacity, either alone. */
TEST(set_backend_event)
{
	struct fg_scenario *s = load("name: t\nduration: 4s\nbackends: {count: 2, capacity: 4, serviceTime: 20ms}\n"
				     "flows: [{name: a, threads: 1}]\n"
				     "events:\n  - {at: 2s, action: set-backend, backend: 1, serviceTime: 60ms}\n"
				     "  - {at: 1s, action: set-backend, backend: 0, capacity: 2}\n");
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_EQ(s->n_events, 2u);
	CHECK(s->events[0].action == FG_SCN_SET_BACKEND && s->events[0].backend == 0 && s->events[0].capacity == 2 &&
	      s->events[0].service_ns == -1);
	CHECK(s->events[1].backend == 1 && s->events[1].capacity == 0 && s->events[1].service_ns == 60000000LL);
	fg_scenario_free(s);
}

/* backends.seats (what fairgate is told) and a settings baseline: the
 * second run's settings are the scenario's with the baseline's laid over. */
TEST(seats_and_settings_baseline)
{
	struct fg_scenario *s = load("name: t\nbackends: {count: 2, capacity: 8, seats: 0}\n"
				     "fairgate: {settings: {serverConcurrencyLimit: 600, serverConcurrencyLimitMode: Adaptive}}\n"
				     "baseline: {description: static, settings: {serverConcurrencyLimitMode: Static}}\n"
				     "flows: [{name: a, threads: 1}]\n");
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_EQ(s->capacity, 8u);
	CHECK_EQ(s->seats, 0u);
	CHECK(s->baseline_settings != NULL);
	CHECK_STR(json_string_value(json_object_get(s->baseline_settings, "serverConcurrencyLimitMode")), "Static");
	CHECK_STR(json_string_value(json_object_get(s->settings, "serverConcurrencyLimitMode")), "Adaptive");
	CHECK_EQ(json_integer_value(json_object_get(s->baseline_settings, "serverConcurrencyLimit")), 600);
	CHECK_STR(s->baseline_description, "static");
	fg_scenario_free(s);
	s = load("name: t\nbackends: {capacity: 4}\nflows: [{name: a, threads: 1}]\n");
	CHECK(s != NULL && s->seats == 4 && s->baseline_settings == NULL);
	fg_scenario_free(s);
}

TEST(bad_fields_are_named)
{
	static const struct {
		const char *text, *path;
	} cases[] = {
		{ "name: t\nbackends: {}\nflows: [{name: a}]\n", "flows[0].threads:" },
		{ "name: t\nbackends: {count: 0}\nflows: [{name: a, threads: 1}]\n", "backends.count:" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1, phases: [{rate: 1}]}]\n", "flows[0].phases:" },
		{ "name: t\nbackends: {}\nflows: [{name: a, phases: [{stop: 99s, rate: 1}]}]\n", "flows[0].phases[0].stop:" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nevents: [{at: 1s, action: fly}]\n",
		  "events[0].action:" },
		{ "name: t\nbackends: {}\nflows: [{name: 'a,b', threads: 1}]\n", "flows[0].name:" },
		{ "name: t\nbackends: {}\nflows: [{name: a, rate: 5, rampTo: 9, threads: 0, arrivals: burst}]\n",
		  "flows[0].arrivals:" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nextra: 1\n", "extra:" },
		{ "name: t\nbackends: {seats: 5000}\nflows: [{name: a, threads: 1}]\n", "backends.seats:" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nbaseline: 1\n", "baseline: must be an object" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nbaseline: {}\n", "baseline.settings: required" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nbaseline: {settings: {listen: x}}\n",
		  "baseline.settings.listen: set by the runner" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nbaseline: {settings: {}, extra: 1}\n",
		  "baseline.extra:" },
		/* set-backend (issue 29): what it changes, and only it. */
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nevents: [{at: 1s, action: set-backend, backend: 0}]\n",
		  "events[0].: set-backend needs serviceTime and/or capacity" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nevents: [{at: 1s, action: pause, backend: 0, capacity: 2}]\n",
		  "events[0].capacity: only for set-backend" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nevents: [{at: 1s, action: set-backend, backend: 0, capacity: 0}]\n",
		  "events[0].capacity:" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nevents: [{at: 1s, action: set-backend, backend: 0, serviceTime: 2m}]\n",
		  "events[0].serviceTime: a duration in [0, 60s]" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nevents: [{at: 1s, action: set-backend, backend: 0, serviceTime: -1s}]\n",
		  "events[0].serviceTime:" },
		/* settle and expect: bounded, named. */
		{ "name: t\nduration: 5s\nsettle: 5s\nbackends: {}\nflows: [{name: a, threads: 1}]\n", "settle: must be in" },
		{ "name: t\nsettle: -1s\nbackends: {}\nflows: [{name: a, threads: 1}]\n", "settle:" },
		{ "name: t\nsettle: soon\nbackends: {}\nflows: [{name: a, threads: 1}]\n", "settle:" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nexpect: 3\n", "expect: must be an object" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nexpect: {p99: 3}\n", "expect.p99:" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nexpect: {p99ServiceTimes: {b: 3}}\n",
		  "expect.p99ServiceTimes.b: no flow has this name" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nexpect: {p99ServiceTimes: {a: 0}}\n",
		  "expect.p99ServiceTimes.a: must be a number in [0.1, 10000]" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nexpect: {p99ServiceTimes: {a: x}}\n",
		  "expect.p99ServiceTimes.a:" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nexpect: {p99ServiceTimes: [a]}\n",
		  "expect.p99ServiceTimes: must be an object" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nexpect: {p99ServiceTimes: {}}\n",
		  "expect.p99ServiceTimes: must be an object" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nexpect: {backendUtilisation: 1.5}\n",
		  "expect.backendUtilisation:" },
		{ "name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\nexpect: {backendUtilisation: 0}\n",
		  "expect.backendUtilisation:" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[512] = "";
		struct fg_scenario *s = fg_scenario_load((const uint8_t *)cases[i].text, strlen(cases[i].text), err,
							 sizeof(err));
		CHECK(s == NULL);
		fg_scenario_free(s);
		if (strncmp(err, cases[i].path, strlen(cases[i].path))) {
			fprintf(stderr, "  case %zu: want %s..., got %s\n", i, cases[i].path, err);
			CHECK(0);
		}
	}
}

/* settle and expect, and the backends' real capacity over the events. */
TEST(settle_expect_and_real_capacity)
{
	struct fg_scenario *s = load("name: t\nduration: 10s\nsettle: 3s\n"
				     "backends: {count: 3, capacity: 8, serviceTime: 20ms}\n"
				     "flows: [{name: heavy, threads: 9}, {name: light, threads: 1}]\n"
				     "expect: {p99ServiceTimes: {light: 3}, backendUtilisation: 0.9}\n"
				     "events:\n"
				     "  - {at: 2s, action: set-backend, backend: 0, serviceTime: 60ms}\n"
				     "  - {at: 2s, action: set-backend, backend: 1, capacity: 2}\n"
				     "  - {at: 4s, action: kill, backend: 2}\n"
				     "  - {at: 5s, action: pause, backend: 1, for: 1s}\n"
				     "  - {at: 7s, action: restart, backend: 2}\n");
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_EQ(s->settle_ns, 3000000000LL);
	CHECK_EQ(s->n_expect_p99, 1u);
	CHECK(s->expect_p99[0].flow == 1 && s->expect_p99[0].times == 3.0);
	CHECK(s->expect_utilisation == 0.9);
	double scale;
	CHECK_EQ(fg_scn_capacity_at(s, 0, &scale), 24u);
	CHECK(scale == 1.0);
	CHECK_EQ(fg_scn_capacity_at(s, 2000000000LL, &scale), 18u); /* 8 + 2 + 8 */
	CHECK(fabs(scale - 5.0 / 3.0) < 1e-9);                       /* (3 + 1 + 1) / 3 */
	CHECK_EQ(fg_scn_capacity_at(s, 4500000000LL, NULL), 10u);   /* backend 2 killed */
	CHECK_EQ(fg_scn_capacity_at(s, 5500000000LL, &scale), 8u);  /* and 1 paused */
	CHECK(fabs(scale - 3.0) < 1e-9);
	CHECK_EQ(fg_scn_capacity_at(s, 6000000000LL, NULL), 10u);   /* resumed */
	CHECK_EQ(fg_scn_capacity_at(s, 7000000000LL, NULL), 18u);   /* restarted */
	/* The series carries it per bin, taken at the bin's end. */
	struct fg_series *r = fg_series_new(s, "fairgate");
	CHECK(r != NULL);
	if (r) {
		CHECK(r->real_capacity[0] == 24 && r->real_capacity[19] == 24 && r->real_capacity[20] == 18 &&
		      r->real_capacity[45] == 10);
		CHECK(isnan(r->learned_sum[0]) && isnan(r->limit_in_force[0]));
	}
	fg_series_free(r);
	fg_scenario_free(s);
	s = load("name: t\nbackends: {}\nflows: [{name: a, threads: 1}]\n");
	CHECK(s != NULL && s->settle_ns == 0 && s->n_expect_p99 == 0 && s->expect_utilisation == 0);
	fg_scenario_free(s);
}

static int line(struct fg_series *s, const char *text, int64_t offset_ns, double step_s)
{
	return fg_series_loadgen_line(s, text, strlen(text), offset_ns, step_s);
}

/* The two-flow scenario's series (NULL, everything freed, on failure). */
static struct fg_series *two_flow_series(struct fg_scenario **s)
{
	*s = load(two_flows);
	struct fg_series *r = *s ? fg_series_new(*s, "fairgate") : NULL;
	CHECK(r != NULL);
	if (!r)
		fg_scenario_free(*s);
	return r;
}

TEST(loadgen_lines_fill_bins_and_totals)
{
	struct fg_scenario *s;
	struct fg_series *r = two_flow_series(&s);
	if (!r)
		return;
	CHECK_EQ(r->n_bins, 40u);
	/* An interval line of the step that started at 0 and one of the step
	 * that started at 2 s: bins 0 and 21 (each ends its interval). */
	CHECK_EQ(line(r, "{\"type\":\"interval\",\"t\":0.1002,\"flows\":[{\"name\":\"heavy\",\"sent\":50,\"responses\":40,"
			 "\"rejected\":{\"queue-full\":3,\"time-out\":1},\"lost\":0,\"latencyMs\":{\"p50\":20.1,\"p90\":30,"
			 "\"p99\":45.5,\"p999\":50,\"max\":51,\"mean\":22}}]}", 0, 2.0), 0);
	CHECK_EQ(line(r, "{\"type\":\"interval\",\"t\":0.2,\"flows\":[{\"name\":\"light\",\"sent\":2,\"responses\":0,"
			 "\"rejected\":{},\"lost\":0,\"latencyMs\":{}}]}", 2000000000LL, 1.0), 0);
	const struct fg_series_bin *b0 = &r->flows[0].bins[0], *b21 = &r->flows[1].bins[21];
	CHECK(b0->sent == 50 && b0->responses == 40 && b0->rejected == 4);
	CHECK(b0->p50 == 20.1 && b0->p99 == 45.5 && b0->p999 == 50);
	CHECK(b21->sent == 2 && isnan(b21->p50)); /* no answer: no latency */
	/* Out of the run: dropped, not written. */
	CHECK_EQ(line(r, "{\"type\":\"interval\",\"t\":9,\"flows\":[{\"name\":\"heavy\",\"sent\":1}]}", 0, 1.0), 0);
	CHECK_EQ(line(r, "not json", 0, 1.0), -EINVAL);
	CHECK_EQ(line(r, "{\"type\":\"other\"}", 0, 1.0), -EINVAL);
	CHECK_EQ(r->bad_lines, 2u);
	/* Two steps' result lines: totals add up, histograms merge bucket-wise. */
	const char *res1 = "{\"type\":\"result\",\"flows\":[{\"name\":\"light\",\"sent\":10,\"responses\":9,"
			   "\"rejected\":{\"queue-full\":1},\"rejectedTotal\":1,\"lost\":0,\"rejectLatencyMs\":{\"p99\":2.5},"
			   "\"histogramUs\":[[1000,1010,4],[2000,2020,5]]}]}";
	const char *res2 = "{\"type\":\"result\",\"flows\":[{\"name\":\"light\",\"sent\":10,\"responses\":10,"
			   "\"rejected\":{},\"rejectedTotal\":0,\"lost\":1,"
			   "\"histogramUs\":[[2000,2020,1],[40000,40400,10]]}]}";
	CHECK_EQ(line(r, res1, 0, 2.0), 0);
	CHECK_EQ(line(r, res2, 2000000000LL, 2.0), 0);
	const struct fg_series_flow *f = &r->flows[1];
	CHECK(f->sent == 20 && f->responses == 19 && f->lost == 1 && f->rejected[FG_REJECT_QUEUE_FULL] == 1);
	CHECK(f->answer_seconds == 4.0 && f->reject_p99_ms == 2.5);
	CHECK_EQ(f->n_hist, 3u);
	CHECK(f->hist[1].low_us == 2000 && f->hist[1].count == 6);
	/* 20 answers: the median is the 10th (in [2000, 2020]), p99 in the last. */
	CHECK(fabs(fg_series_quantile(f, 0.5) - 2.010) < 1e-9);
	CHECK(fabs(fg_series_quantile(f, 0.99) - 40.2) < 1e-9);
	CHECK(isnan(fg_series_quantile(&r->flows[0], 0.5)));
	fg_series_free(r);
	fg_scenario_free(s);
}

TEST(status_samples_and_estimated_seats)
{
	struct fg_scenario *s;
	struct fg_series *r = two_flow_series(&s);
	if (!r)
		return;
	snprintf(r->flows[0].level, sizeof(r->flows[0].level), "tenants");
	snprintf(r->flows[0].distinguisher, sizeof(r->flows[0].distinguisher), "tenants/heavy");
	snprintf(r->flows[1].level, sizeof(r->flows[1].level), "tenants");
	snprintf(r->flows[1].distinguisher, sizeof(r->flows[1].distinguisher), "tenants/light");
	fg_series_mark_shared(r);
	CHECK(!r->flows[0].seats_estimated && !r->flows[1].seats_estimated);
	const char *st1 = "{\"priorityLevels\":[{\"name\":\"tenants\",\"seatsInUse\":7,\"seatLimit\":8}],"
			  "\"counters\":{\"rejected\":{\"queue-full\":10}},"
			  "\"flows\":[{\"priorityLevel\":\"tenants\",\"flow\":\"tenants/heavy\",\"seatsExecuting\":6},"
			  "{\"priorityLevel\":\"tenants\",\"flow\":\"tenants/light\",\"seatsExecuting\":1},"
			  "{\"priorityLevel\":\"other\",\"flow\":\"tenants/heavy\",\"seatsExecuting\":50}]}";
	const char *st2 = "{\"priorityLevels\":[{\"name\":\"tenants\",\"seatsInUse\":8,\"seatLimit\":8}],"
			  "\"counters\":{\"rejected\":{\"queue-full\":15}},\"flows\":[]}";
	json_t *j1 = json_loads(st1, 0, NULL), *j2 = json_loads(st2, 0, NULL);
	fg_series_status(r, 0, j1);
	fg_series_status(r, 1, j2);
	fg_series_status(r, 99, j2); /* beyond the run: ignored */
	CHECK_EQ(r->n_levels, 1u);
	CHECK(r->levels[0].in_use[0] == 7 && r->levels[0].limit[1] == 8 && isnan(r->levels[0].in_use[2]));
	CHECK(r->flows[0].bins[0].seats == 6 && r->flows[1].bins[0].seats == 1 && r->flows[0].bins[1].seats == 0);
	CHECK(isnan(r->rejects_per_s[FG_REJECT_QUEUE_FULL][0]) && r->rejects_per_s[FG_REJECT_QUEUE_FULL][1] == 50);
	/* One fairgate flow for both (the baseline): seats from responses. */
	snprintf(r->flows[1].distinguisher, sizeof(r->flows[1].distinguisher), "tenants/heavy");
	fg_series_mark_shared(r);
	CHECK(r->flows[0].seats_estimated && r->flows[1].seats_estimated);
	CHECK_EQ(line(r, "{\"type\":\"interval\",\"t\":0.5,\"flows\":[{\"name\":\"heavy\",\"sent\":20,\"responses\":20}]}",
		      0, 1.0), 0);
	/* 200 answers/s x 20 ms x width 2 */
	CHECK(fabs(r->flows[0].bins[4].seats - 8.0) < 1e-9);
	json_decref(j1);
	json_decref(j2);
	fg_series_free(r);
	fg_scenario_free(s);
}

/* Interval lines' histograms merge into the after-settle histogram from
 * the settle time on; status samples give the backends' side. */
TEST(settled_histogram_and_backend_samples)
{
	struct fg_scenario *s = load("name: t\nduration: 4s\nsettle: 1s\nbackends: {count: 2, capacity: 4, serviceTime: 20ms}\n"
				     "flows: [{name: a, threads: 2}]\n");
	struct fg_series *r = s ? fg_series_new(s, "fairgate") : NULL;
	CHECK(r != NULL);
	if (!r) {
		fg_scenario_free(s);
		return;
	}
	/* Bin 4 (before 1 s): whole-run bins only; bins 10 and 12: after. */
	CHECK_EQ(line(r, "{\"type\":\"interval\",\"t\":0.5,\"flows\":[{\"name\":\"a\",\"sent\":5,\"responses\":5,"
			 "\"histogramUs\":[[900000,909000,5]]}]}", 0, 4.0), 0);
	CHECK_EQ(line(r, "{\"type\":\"interval\",\"t\":0.1,\"flows\":[{\"name\":\"a\",\"sent\":9,\"responses\":9,"
			 "\"histogramUs\":[[20000,20200,9]]}]}", 1000000000LL, 3.0), 0);
	CHECK_EQ(line(r, "{\"type\":\"interval\",\"t\":0.3,\"flows\":[{\"name\":\"a\",\"sent\":1,\"responses\":1,"
			 "\"histogramUs\":[[40000,40400,1],[\"x\",1,1],[5,1,1]]}]}", 1000000000LL, 3.0), 0);
	/* After the run (the last answers): still after the settle time. */
	CHECK_EQ(line(r, "{\"type\":\"interval\",\"t\":4.3,\"flows\":[{\"name\":\"a\",\"responses\":1,"
			 "\"histogramUs\":[[40000,40400,1]]}]}", 0, 4.0), 0);
	const struct fg_series_flow *f = &r->flows[0];
	CHECK_EQ(f->n_settled, 2u);
	CHECK(f->settled[0].count == 9 && f->settled[1].count == 2);
	CHECK(fabs(fg_series_settled_quantile(f, 0.5) - 20.1) < 1e-9);
	CHECK(fabs(fg_series_settled_quantile(f, 0.99) - 40.2) < 1e-9);
	CHECK(f->bins[4].sent == 5 && f->bins[10].sent == 9);
	CHECK_EQ(f->n_hist, 0u); /* the whole run's comes from result lines */
	json_t *st = json_loads("{\"serverConcurrencyLimitInForce\":12,\"backendPool\":[{\"capacitySeats\":5,"
				"\"learnedLimitSeats\":5},{\"capacitySeats\":7,\"learnedLimitSeats\":7}]}", 0, NULL);
	json_t *st_static = json_loads("{\"serverConcurrencyLimitInForce\":8,\"backendPool\":[{\"capacitySeats\":4},"
				       "{\"capacitySeats\":4}]}", 0, NULL);
	fg_series_status(r, 3, st);
	fg_series_status(r, 4, st_static);
	CHECK(r->limit_in_force[3] == 12 && r->capacity_sum[3] == 12 && r->learned_sum[3] == 12);
	CHECK(r->limit_in_force[4] == 8 && r->capacity_sum[4] == 8 && isnan(r->learned_sum[4]));
	CHECK(r->real_capacity[4] == 8);
	json_decref(st);
	json_decref(st_static);
	fg_series_free(r);
	fg_scenario_free(s);
	/* Without a settle time nothing goes to the after-settle histogram. */
	struct fg_series *w = two_flow_series(&s);
	if (!w)
		return;
	CHECK_EQ(line(w, "{\"type\":\"interval\",\"t\":3,\"flows\":[{\"name\":\"heavy\",\"histogramUs\":[[1,2,3]]}]}",
		      0, 4.0), 0);
	CHECK_EQ(w->flows[0].n_settled, 0u);
	CHECK(isnan(fg_series_settled_quantile(&w->flows[0], 0.5)));
	fg_series_free(w);
	fg_scenario_free(s);
}

TEST_MAIN
