/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scenario tests: every tests/scenarios/ *.json runs through the simulator
 * (the real queue set on a virtual clock) and each client's average seats
 * are compared with the weighted max-min ideal of bench/sim_ideal (computed
 * from the scenario itself, not by the code under test, and the same one
 * `fairgate-bench sim --table` prints): demand = threads * initialSeats *
 * exec / (exec + think) (open loop: rate * exec * initialSeats), water-filled
 * over the level's concurrency (its current limit at the end: borrowing may
 * have moved it).  The "expect" list of a scenario gives, per window, the
 * margin and what else must hold (an explicit ideal, bounds on flows' seats,
 * clients' p99 queue waits, levels' average current limits, the backends' learned
 * limits against their true capacity, a measure other than avgSeats, ...).
 */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>

#include "duration.h"
#include "sim.h"
#include "sim_ideal.h"
#include "test.h"

static const char *scenario_dir;

/* The backends' limits over a window (sim_backends_window), as multiples of
 * their true capacity summed: limitAvg [lo, hi] bounds the window's average
 * limit sum, limitRange [lo, hi] every sample of it (against the least and
 * the most capacity of the window), limitSwing the most minus the least
 * sample (steady-state oscillation). */
static void check_limits(const char *file, int w, json_t *exp, json_t *backends)
{
	json_t *avg = json_object_get(exp, "limitAvg"), *range = json_object_get(exp, "limitRange"),
	       *swing = json_object_get(exp, "limitSwing");
	if (!avg && !range && !swing)
		return;
	CHECK(backends != NULL);
	if (!backends)
		return;
	json_t *limit = json_object_get(backends, "limitSum"), *cap = json_object_get(backends, "capacitySum");
	double lo = json_number_value(json_object_get(limit, "min")), hi = json_number_value(json_object_get(limit, "max"));
	double mean = json_number_value(json_object_get(limit, "avg"));
	double cap_lo = json_number_value(json_object_get(cap, "min")), cap_hi = json_number_value(json_object_get(cap, "max"));
	double cap_avg = json_number_value(json_object_get(cap, "avg"));
	printf("  %s window %d: limit sum %.0f..%.0f (average %.2f) for a capacity of %.0f..%.0f\n", file, w, lo, hi, mean,
	       cap_lo, cap_hi);
	CHECK(json_integer_value(json_object_get(backends, "samples")) > 0);
	if (avg)
		CHECK(mean >= json_number_value(json_array_get(avg, 0)) * cap_avg - 1e-9 &&
		      mean <= json_number_value(json_array_get(avg, 1)) * cap_avg + 1e-9);
	if (range)
		CHECK(lo >= json_number_value(json_array_get(range, 0)) * cap_hi - 1e-9 &&
		      hi <= json_number_value(json_array_get(range, 1)) * cap_lo + 1e-9);
	if (swing)
		CHECK(hi - lo <= json_number_value(swing) * cap_avg + 1e-9);
}

static void check_window(const char *file, json_t *scn, json_t *exp, json_t *result)
{
	int w = (int)json_integer_value(json_object_get(exp, "window"));
	json_t *margin_v = json_object_get(exp, "margin");
	double margin = margin_v ? json_number_value(margin_v) : 0.01;
	const char *capacity = json_string_value(json_object_get(exp, "capacity"));
	json_t *levels = json_object_get(result, "levels");
	json_t *got = json_object_get(json_array_get(json_object_get(result, "windows"), (size_t)w), "clients");
	size_t n = json_array_size(json_object_get(scn, "clients"));
	static struct fg_sim_ideal id;
	int rc = fg_sim_ideal_compute(scn, result, w, json_object_get(exp, "merge"), capacity && !strcmp(capacity, "used"),
				      json_string_value(json_object_get(exp, "measure")), &id);
	CHECK_EQ(rc, 0);
	if (rc)
		return;
	int n_flows = id.n_flows;
	double measured[SIM_IDEAL_MAX_FLOWS], alloc[SIM_IDEAL_MAX_FLOWS];
	for (int f = 0; f < n_flows; f++) {
		measured[f] = id.flows[f].measured;
		alloc[f] = id.flows[f].ideal;
	}
	json_t *lvl0 = NULL, *lv;
	size_t lk;
	json_array_foreach(levels, lk, lv) /* the last level any flow is in: the one `minEpochs` reads */
		for (int f = 0; f < n_flows; f++)
			if (id.flows[f].level && !strcmp(id.flows[f].level, json_string_value(json_object_get(lv, "name"))))
				lvl0 = lv;
	json_t *ideal = json_object_get(exp, "ideal");
	double worst = 0;
	for (int f = 0; f < n_flows; f++) {
		double want = ideal ? json_number_value(json_array_get(ideal, (size_t)f)) : alloc[f];
		double err = fg_sim_ideal_error(measured[f], want);
		if (err > worst)
			worst = err;
	}
	int unfair = json_is_true(json_object_get(exp, "unfair"));
	printf("  %s window %d: %d flows, worst relative error %.4f%% (margin %.4f%%)%s%s\n", file, w, n_flows,
	       worst * 100, margin * 100, unfair ? " [must exceed]" : "", capacity ? " [of the seats used]" : "");
	if (unfair)
		CHECK(worst > margin);
	else
		CHECK(worst <= margin + 1e-12);
	if (!unfair && worst > margin)
		for (int f = 0; f < n_flows && f < 12; f++)
			fprintf(stderr, "    flow %d: measured %.5f ideal %.5f\n", f, measured[f],
				ideal ? json_number_value(json_array_get(ideal, (size_t)f)) : alloc[f]);
	/* A test's own assertions: per-flow bounds on the average seats, and the
	 * window's average current limit of named levels (borrowing happened). */
	json_t *bounds = json_object_get(exp, "bounds");
	for (int f = 0; f < n_flows && f < (int)json_array_size(bounds); f++) {
		json_t *b = json_array_get(bounds, (size_t)f);
		double lo = json_number_value(json_array_get(b, 0)), hi = json_number_value(json_array_get(b, 1));
		printf("  %s window %d: flow %d got %.4f seats, bounds [%g, %g]\n", file, w, f, measured[f], lo, hi);
		CHECK(measured[f] >= lo && measured[f] <= hi);
	}
	/* Per-flow bounds on the 99th percentile of the queue wait (seconds;
	 * null: none). */
	json_t *max_wait = json_object_get(exp, "maxWaitP99");
	for (size_t f = 0; f < n && f < json_array_size(max_wait); f++) {
		json_t *bound = json_array_get(max_wait, f);
		if (!json_is_number(bound))
			continue;
		double p99 = json_number_value(json_object_get(json_array_get(got, f), "waitP99"));
		printf("  %s window %d: client %zu waited %.4f s at p99, at most %g\n", file, w, f, p99,
		       json_number_value(bound));
		CHECK(p99 <= json_number_value(bound));
	}
	const char *lname;
	json_t *range;
	json_object_foreach(json_object_get(exp, "avgCurrentLimit"), lname, range) {
		json_t *found = NULL, *lv3;
		size_t k3;
		json_array_foreach(levels, k3, lv3)
			if (!strcmp(json_string_value(json_object_get(lv3, "name")), lname))
				found = lv3;
		CHECK(found != NULL);
		double avg = json_number_value(json_array_get(json_object_get(found, "avgCurrentLimit"), (size_t)w));
		double lo = json_number_value(json_array_get(range, 0)), hi = json_number_value(json_array_get(range, 1));
		printf("  %s window %d: %s's average current limit %.4f, bounds [%g, %g]\n", file, w, lname, avg, lo, hi);
		CHECK(avg >= lo - 1e-9 && avg <= hi + 1e-9);
	}
	/* Rejections. */
	uint64_t rejects = 0, want_reason = 0;
	const char *reason = json_string_value(json_object_get(exp, "requireRejects"));
	for (size_t i = 0; i < n; i++) {
		json_t *rj = json_object_get(json_array_get(got, i), "rejected");
		const char *k;
		json_t *v;
		json_object_foreach(rj, k, v) {
			rejects += (uint64_t)json_integer_value(v);
			if (reason && !strcmp(k, reason))
				want_reason += (uint64_t)json_integer_value(v);
		}
	}
	if (json_is_true(json_object_get(exp, "noRejects")))
		CHECK_EQ(rejects, 0);
	if (reason)
		CHECK(want_reason > 0);
	if (json_is_true(json_object_get(exp, "noLimitViolations"))) { /* the seat limit held across workers */
		json_t *lv2;
		size_t k2;
		json_array_foreach(json_object_get(result, "levels"), k2, lv2)
			CHECK_EQ(json_integer_value(json_object_get(lv2, "seatLimitViolations")), 0);
	}
	check_limits(file, w, exp, json_object_get(json_array_get(json_object_get(result, "windows"), (size_t)w), "backends"));
	json_t *min_epochs = json_object_get(exp, "minEpochs");
	if (min_epochs) {
		json_int_t e = json_integer_value(json_object_get(lvl0, "epochs"));
		printf("  %s: virtual time wrapped %lld times\n", file, (long long)e);
		CHECK(e >= json_integer_value(min_epochs));
	}
}

static void run_file(const char *name)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", scenario_dir, name);
	json_error_t je;
	json_t *scn = json_load_file(path, 0, &je);
	CHECK(scn != NULL);
	if (!scn)
		return;
	char *text = json_dumps(scn, JSON_COMPACT);
	char err[512];
	struct fg_sim *s = fg_sim_load((const uint8_t *)text, strlen(text), err, sizeof(err));
	free(text);
	if (!s)
		fprintf(stderr, "  %s: %s\n", name, err);
	CHECK(s != NULL);
	if (s) {
		json_t *result = fg_sim_run(s);
		CHECK(result != NULL);
		size_t i;
		json_t *exp;
		json_array_foreach(json_object_get(scn, "expect"), i, exp)
			if (result)
				check_window(name, scn, exp, result);
		json_decref(result);
		fg_sim_free(s);
	}
	json_decref(scn);
}

/* fn on every tests/scenarios/ *.json; how many. */
static int for_each_scenario(void (*fn)(const char *name))
{
	DIR *d = opendir(scenario_dir);
	CHECK(d != NULL);
	if (!d)
		return 0;
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len > 5 && !strcmp(e->d_name + len - 5, ".json")) {
			fn(e->d_name);
			n++;
		}
	}
	closedir(d);
	return n;
}

TEST(all_scenarios)
{
	CHECK(for_each_scenario(run_file) >= 19);
}

/* Two runs of a scenario give the same results, byte for byte. */
static void check_deterministic(const char *name)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", scenario_dir, name);
	json_t *scn = json_load_file(path, 0, NULL);
	CHECK(scn != NULL);
	if (!scn)
		return;
	char *text = json_dumps(scn, JSON_COMPACT), err[256];
	char *out[2] = { NULL, NULL };
	for (int k = 0; k < 2; k++) {
		struct fg_sim *s = fg_sim_load((const uint8_t *)text, strlen(text), err, sizeof(err));
		json_t *r = s ? fg_sim_run(s) : NULL;
		out[k] = r ? json_dumps(r, JSON_COMPACT) : NULL;
		json_decref(r);
		fg_sim_free(s);
	}
	CHECK(out[0] && out[1]);
	if (out[0] && out[1] && strcmp(out[0], out[1])) {
		fprintf(stderr, "  %s: two runs differ\n", name);
		CHECK(0);
	}
	free(out[0]);
	free(out[1]);
	free(text);
	json_decref(scn);
}

TEST(determinism)
{
	CHECK(for_each_scenario(check_deterministic) >= 19);
}

/* The weighted ideal of bench/sim_ideal gives the explicit ideals of the
 * weights_* scenarios (2, 4, 8 of 14 seats; Volcano's 3 and 6; 2 then 2 and
 * 6), and `sim --table` prints it beside each flow's avgSeats and error. */
TEST(weighted_ideal_and_table)
{
	const char *files[] = { "weights_124.json", "weights_volcano.json", "weights_asking_less.json" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", scenario_dir, files[i]);
		json_t *scn = json_load_file(path, 0, NULL);
		CHECK(scn != NULL);
		if (!scn)
			continue;
		char *text = json_dumps(scn, JSON_COMPACT), err[256];
		struct fg_sim *s = fg_sim_load((const uint8_t *)text, strlen(text), err, sizeof(err));
		free(text);
		CHECK(s != NULL);
		json_t *r = s ? fg_sim_run(s) : NULL;
		json_t *exp = json_array_get(json_object_get(scn, "expect"), 0), *given = json_object_get(exp, "ideal");
		static struct fg_sim_ideal id;
		CHECK(r && given && !fg_sim_ideal_compute(scn, r, 0, NULL, false, NULL, &id));
		CHECK_EQ(id.n_flows, json_array_size(given));
		for (int f = 0; f < id.n_flows; f++) {
			double want = json_number_value(json_array_get(given, (size_t)f));
			printf("  %s flow %d: weight %.3f, weighted ideal %.4f, the scenario's %.4f\n", files[i], f,
			       id.flows[f].weight, id.flows[f].ideal, want);
			CHECK(fabs(id.flows[f].ideal - want) < 1e-6);
		}
		/* The table: a header per window, a row per flow with its ideal and error. */
		char *buf = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&buf, &len);
		double worst = fg_sim_ideal_table(mem, scn, r);
		fclose(mem);
		CHECK(strstr(buf, "window 0 (") && strstr(buf, "AVGSEATS") && strstr(buf, "IDEAL") && strstr(buf, "ERROR"));
		int rows = 0;
		for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
			char flow[64], level[64];
			double weight, demand, avg, ideal, e;
			if (sscanf(line, " %63s %63s %lf %lf %lf %lf* %lf%%", flow, level, &weight, &demand, &avg, &ideal, &e) == 7 &&
			    rows < id.n_flows) {
				CHECK(fabs(ideal - id.flows[rows].ideal) < 1e-3 && fabs(avg - id.flows[rows].measured) < 1e-3);
				CHECK(fabs(e / 100 - fg_sim_ideal_error(id.flows[rows].measured, id.flows[rows].ideal)) < 1e-3);
				rows++;
			}
		}
		CHECK_EQ(rows, id.n_flows);
		CHECK(worst <= json_number_value(json_object_get(exp, "margin")));
		free(buf);
		json_decref(r);
		fg_sim_free(s);
		json_decref(scn);
	}
}

static void expect_error(const char *json, const char *fragment)
{
	char err[512] = "";
	struct fg_sim *s = fg_sim_load((const uint8_t *)json, strlen(json), err, sizeof(err));
	CHECK(s == NULL);
	if (!strstr(err, fragment)) {
		fprintf(stderr, "  error \"%s\" lacks \"%s\"\n", err, fragment);
		CHECK(0);
	}
	fg_sim_free(s);
}

TEST(bad_scenarios_name_the_field)
{
	expect_error("{", "malformed JSON");
	expect_error("[]", "scenario: must be a JSON object");
	expect_error("{\"clients\": []}", "clients: must be a non-empty list");
	/* A misspelt or unknown field is an error, not a silent default. */
	expect_error("{\"clients\": [{\"name\":\"a\", \"bogusField\": 1}]}", "clients[0].bogusField: unknown field");
	expect_error("{\"clients\": [{\"name\":\"a\", \"thinkTiem\": \"1s\"}]}", "clients[0].thinkTiem: unknown field");
	expect_error("{\"wrokers\": 2, \"clients\": [{\"name\":\"a\"}]}", "wrokers: unknown field");
	expect_error("{\"workers\": 2, \"clients\": [{\"name\":\"a\", \"rxWorker\": 2}]}", "clients[0].rxWorker");
	expect_error("{\"clients\": [{\"name\":\"a\", \"rxWorker\": -1}]}", "clients[0].rxWorker");
	expect_error("{\"clients\": [{\"name\":\"a\", \"connections\": 0}]}", "clients[0].connections");
	expect_error("{\"clients\": [{\"name\":\"a\", \"connections\": \"2\"}]}", "clients[0].connections");
	expect_error("{\"placement\": \"nearest\", \"clients\": [{\"name\":\"a\"}]}", "placement: must be");
	expect_error("{\"placement\": 1, \"clients\": [{\"name\":\"a\"}]}", "placement");
	expect_error("{\"duration\": \"soon\", \"clients\": [{\"name\":\"a\"}]}", "duration: must be a duration");
	expect_error("{\"clients\": [{\"name\":\"a\", \"threads\": 0}]}", "clients[0].threads: must be an integer");
	expect_error("{\"clients\": [{\"name\":\"a\", \"execTime\": \"1s\", \"thinkTime\": \"-2s\"}]}",
		     "clients[0].thinkTime: must be at least -execTime");
	expect_error("{\"clients\": [{}]}", "clients[0].name: required");
	expect_error("{\"windows\": [\"5s-1s\"], \"clients\": [{\"name\":\"a\"}]}", "windows[0]");
	expect_error("{\"objects\": [{\"kind\": \"FlowSchema\"}], \"clients\": [{\"name\":\"a\"}]}",
		     "objects: 3 error(s): document 1 item 0 FlowSchema/(no name): apiVersion: must be");
	expect_error("{\"objects\": [{\"apiVersion\": \"flowcontrol.apiserver.k8s.io/v1\", \"kind\": \"PriorityLevelConfiguration\", \"metadata\": {\"name\": \"p\"},"
		     "\"spec\": {\"type\": \"Limited\", \"limited\": {\"limitResponse\": {\"type\": \"Queue\","
		     "\"queuing\": {\"queues\": 512, \"handSize\": 8}}}}}], \"clients\": [{\"name\":\"a\"}]}",
		     "handSize: Invalid value: 8: required entropy bits of deckSize 512 and handSize 8 should not be greater than 60");
	expect_error("{\"clients\": [{\"name\":\"a\", \"priorityLevel\": \"nope\"}]}", "clients[0].priorityLevel");
	expect_error("{\"levelConcurrency\": {\"nope\": 3}, \"clients\": [{\"name\":\"a\"}]}", "levelConcurrency.nope");
	expect_error("{\"borrowingPeriod\": \"500us\", \"clients\": [{\"name\":\"a\"}]}",
		     "borrowingPeriod: must be at least 1ms");
	expect_error("{\"borrowingPeriod\": 10, \"clients\": [{\"name\":\"a\"}]}", "borrowingPeriod: must be a duration");
	/* Backends and their events (bench/sim_backends.h). */
#define C1 ", \"clients\": [{\"name\":\"a\"}]}"
	expect_error("{\"backends\": []" C1, "backends: must be a list of 1..64");
	expect_error("{\"backends\": [{\"capacty\": 2}]" C1, "backends[0].capacty: unknown field");
	expect_error("{\"backends\": [{\"capacity\": -1}]" C1, "backends[0].capacity");
	expect_error("{\"backends\": [{\"serviceScale\": 0}]" C1, "backends[0].serviceScale");
	expect_error("{\"backends\": [{\"name\": \"x\"}, {\"name\": \"x\"}]" C1, "backends[1].name: x is named twice");
	expect_error("{\"backendEvents\": []" C1, "backendEvents: needs a backends list");
	expect_error("{\"backends\": [{\"name\": \"x\"}], \"backendEvents\": [{\"backend\": \"x\", \"action\": \"drain\"}]" C1,
		     "backendEvents[0].at: required");
	expect_error("{\"backends\": [{\"name\": \"x\"}], \"backendEvents\": [{\"at\": \"1s\", \"backend\": \"y\", \"action\": \"drain\"}]" C1,
		     "backendEvents[0].backend: no backend named y");
	expect_error("{\"backends\": [{\"name\": \"x\"}], \"backendEvents\": [{\"at\": \"1s\", \"backend\": \"x\", \"action\": \"stop\"}]" C1,
		     "backendEvents[0].action: must be");
	expect_error("{\"backends\": [{\"name\": \"x\"}], \"backendEvents\": [{\"at\": \"1s\", \"backend\": \"x\", \"action\": \"pause\"}]" C1,
		     "backendEvents[0].for: a pause needs a positive duration");
	expect_error("{\"backends\": [{\"name\": \"x\"}], \"backendEvents\": [{\"at\": \"1s\", \"backend\": \"x\", \"action\": \"set\"}]" C1,
		     "\"set\" needs capacity, seats or serviceScale");
	expect_error("{\"backends\": [{\"name\": \"x\"}], \"backendEvents\": [{\"at\": \"1s\", \"backend\": \"x\", \"action\": \"drain\", \"capacity\": 3}]" C1,
		     "backendEvents[0].capacity: only for \"set\"");
	expect_error("{\"duration\": \"5s\", \"backends\": [{\"name\": \"x\"}], \"backendEvents\": [{\"at\": \"6s\", \"backend\": \"x\", \"action\": \"drain\"}]" C1,
		     "backendEvents[0].at: required, a duration within the scenario's");
	/* A backend's seats told apart from its capacity, and the adaptive mode. */
	expect_error("{\"backends\": [{\"seats\": -1}]" C1, "backends[0].seats");
	expect_error("{\"backends\": [{\"seats\": \"8\"}]" C1, "backends[0].seats");
	expect_error("{\"backends\": [{\"name\": \"x\"}], \"backendEvents\": [{\"at\": \"1s\", \"backend\": \"x\", \"action\": \"drain\", \"seats\": 3}]" C1,
		     "backendEvents[0].seats: only for \"set\"");
	expect_error("{\"backends\": [{\"name\": \"x\"}], \"backendEvents\": [{\"at\": \"1s\", \"backend\": \"x\", \"action\": \"set\", \"seats\": 1e9}]" C1,
		     "backendEvents[0].seats");
	expect_error("{\"serverConcurrencyLimitMode\": \"adaptive\"" C1,
		     "serverConcurrencyLimitMode: must be \"Static\" or \"Adaptive\"");
	expect_error("{\"serverConcurrencyLimitMode\": \"Adaptive\"" C1, "serverConcurrencyLimitMode: Adaptive needs a backends list");
	expect_error("{\"serverConcurrencyLimitMode\": \"Adaptive\", \"serverConcurrencyLimit\": 10, \"serverConcurrencyLimitMin\": 11,"
		     "\"backends\": [{}]" C1, "serverConcurrencyLimitMin: must be at most serverConcurrencyLimit");
	expect_error("{\"serverConcurrencyLimitMode\": \"Adaptive\", \"serverConcurrencyLimit\": 10, \"serverConcurrencyLimitMax\": 9,"
		     "\"backends\": [{}]" C1, "serverConcurrencyLimitMax: must be at least serverConcurrencyLimit");
	expect_error("{\"serverConcurrencyLimitMin\": 0" C1, "serverConcurrencyLimitMin");
	expect_error("{\"serverConcurrencyLimitMax\": 2000000" C1, "serverConcurrencyLimitMax");
	expect_error("{\"serverConcurrencyLimitMode\": \"Adaptive\", \"serverConcurrencyLimit\": 2000000, \"backends\": [{}]" C1,
		     "serverConcurrencyLimit: at most 1000000 in Adaptive mode");
	expect_error("{\"serverConcurrencyLimitMode\": \"Adaptive\", \"duration\": \"2h\", \"backends\": [{}]" C1,
		     "duration: at most 1h in Adaptive mode");
#undef C1
}

/* A scenario given as text, run: its results, or NULL (checked failed). */
static json_t *run_text(const char *json)
{
	char err[512] = "";
	struct fg_sim *s = fg_sim_load((const uint8_t *)json, strlen(json), err, sizeof(err));
	if (!s)
		fprintf(stderr, "  %s\n", err);
	CHECK(s != NULL);
	if (!s)
		return NULL;
	json_t *r = fg_sim_run(s);
	CHECK(r != NULL);
	fg_sim_free(s);
	return r;
}

/* The first client's dispatches in each of the first n windows. */
static void dispatched_per_window(json_t *r, uint64_t *calls, size_t n)
{
	for (size_t w = 0; w < n; w++)
		calls[w] = (uint64_t)json_integer_value(json_object_get(
			json_array_get(json_object_get(json_array_get(json_object_get(r, "windows"), w), "clients"), 0),
			"dispatched"));
}

/* The backend model: a 4-seat level over one 2-seat backend holds two
 * requests for room at a time; a backend set to serviceScale 2 halves the
 * calls; a drained one takes nothing new (everything waits held) until
 * enabled; a pause holds the answers.  Windows of 1 s, 4 threads of 100 ms. */
TEST(backends_hold_slow_down_drain_and_pause)
{
	const char *json =
		"{\"duration\": \"8s\", \"levelConcurrency\": {\"global-default\": 4},"
		"\"windows\": [\"0s-1s\", \"2s-3s\", \"4s-5s\", \"6s-7s\"],"
		"\"backends\": [{\"name\": \"b\", \"capacity\": 2}],"
		"\"backendEvents\": [{\"at\": \"2s\", \"backend\": \"b\", \"action\": \"set\", \"serviceScale\": 2},"
		"  {\"at\": \"4s\", \"backend\": \"b\", \"action\": \"drain\"},"
		"  {\"at\": \"5s\", \"backend\": \"b\", \"action\": \"enable\"},"
		"  {\"at\": \"5s\", \"backend\": \"b\", \"action\": \"set\", \"serviceScale\": 1},"
		"  {\"at\": \"6s\", \"backend\": \"b\", \"action\": \"pause\", \"for\": \"500ms\"}],"
		"\"clients\": [{\"name\": \"a\", \"threads\": 4, \"execTime\": \"100ms\"}]}";
	json_t *r = run_text(json);
	if (!r)
		return;
	uint64_t calls[4];
	dispatched_per_window(r, calls, 4);
	printf("  dispatched per window: %llu %llu %llu %llu, held %lld\n", (unsigned long long)calls[0],
	       (unsigned long long)calls[1], (unsigned long long)calls[2], (unsigned long long)calls[3],
	       (long long)json_integer_value(json_object_get(r, "heldForBackendRoom")));
	CHECK(calls[0] >= 20 && calls[0] <= 22);  /* 2 at a time, 100 ms each (+2 held at the start) */
	CHECK(calls[1] >= 9 && calls[1] <= 11);   /* 200 ms each */
	CHECK(calls[2] <= 2);                     /* drained: the 4 seats stay held */
	CHECK(calls[3] >= 9 && calls[3] <= 11);   /* paused for half the window */
	json_t *b = json_array_get(json_object_get(r, "backends"), 0);
	CHECK_EQ(json_integer_value(json_object_get(b, "maxOutstanding")), 2);
	CHECK(json_integer_value(json_object_get(r, "heldForBackendRoom")) > 40);
	json_decref(r);
}

/* A backend told more seats than it executes: fairgate sends 4 to a
 * backend that executes 2, the other 2 wait at the backend (first come
 * first served) and the calls take twice as long; `set capacity` (seats
 * given: fairgate is not told) lets it execute 4; `set seats` tells
 * fairgate 1, which then holds the rest for room.  4 threads of 100 ms. */
TEST(backend_fifo_beyond_its_capacity)
{
	const char *json =
		"{\"duration\": \"6s\", \"levelConcurrency\": {\"global-default\": 4},"
		"\"windows\": [\"1s-2s\", \"3s-4s\", \"5s-6s\"],"
		"\"backends\": [{\"name\": \"b\", \"capacity\": 2, \"seats\": 4}],"
		"\"backendEvents\": [{\"at\": \"2s\", \"backend\": \"b\", \"action\": \"set\", \"capacity\": 4},"
		"  {\"at\": \"4s\", \"backend\": \"b\", \"action\": \"set\", \"seats\": 1}],"
		"\"clients\": [{\"name\": \"a\", \"threads\": 4, \"execTime\": \"100ms\"}]}";
	json_t *r = run_text(json);
	if (!r)
		return;
	uint64_t calls[3];
	dispatched_per_window(r, calls, 3);
	json_t *c0 = json_array_get(json_object_get(json_array_get(json_object_get(r, "windows"), 0), "clients"), 0);
	double held = json_real_value(json_object_get(c0, "avgSeats")), at = json_real_value(json_object_get(c0, "avgSeatsAtBackend"));
	json_t *b = json_array_get(json_object_get(r, "backends"), 0);
	printf("  dispatched per window: %llu %llu %llu; window 0: %.3f seats held, %.3f at the backend; queued there %lld (at most %lld)\n",
	       (unsigned long long)calls[0], (unsigned long long)calls[1], (unsigned long long)calls[2], held, at,
	       (long long)json_integer_value(json_object_get(b, "queuedAtBackend")),
	       (long long)json_integer_value(json_object_get(b, "maxQueuedAtBackend")));
	CHECK(calls[0] >= 19 && calls[0] <= 21); /* 2 at a time at the backend */
	CHECK(calls[1] >= 39 && calls[1] <= 41); /* 4 at a time */
	CHECK(calls[2] >= 9 && calls[2] <= 11);  /* fairgate sends 1 at a time */
	CHECK(fabs(held - 4) < 0.01 && fabs(at - 2) < 0.01);
	CHECK_EQ(json_integer_value(json_object_get(b, "maxQueuedAtBackend")), 2);
	CHECK_EQ(json_integer_value(json_object_get(b, "capacity")), 4);
	CHECK_EQ(json_integer_value(json_object_get(b, "seats")), 1);
	CHECK(json_integer_value(json_object_get(r, "heldForBackendRoom")) > 20);
	/* The series: one sample per 100 ms, fairgate's limit and the true capacity. */
	json_t *series = json_object_get(b, "series");
	CHECK_EQ(json_array_size(json_object_get(series, "limit")), 60);
	CHECK_EQ(json_integer_value(json_array_get(json_object_get(series, "limit"), 0)), 4);
	CHECK_EQ(json_integer_value(json_array_get(json_object_get(series, "capacity"), 0)), 2);
	CHECK_EQ(json_integer_value(json_array_get(json_object_get(series, "limit"), 59)), 1);
	json_decref(r);
}

/* An open-loop client (rate > 0) needs no threads: threads 0 is accepted and
 * its Poisson arrivals run; a closed-loop client still needs one. */
TEST(open_loop_without_threads)
{
	const char *json = "{\"duration\": \"20s\", \"levelConcurrency\": {\"global-default\": 10},"
			   "\"clients\": [{\"name\": \"a\", \"threads\": 0, \"rate\": 5, \"execTime\": \"100ms\"}]}";
	json_t *r = run_text(json);
	if (!r)
		return;
	json_t *c = json_array_get(json_object_get(json_array_get(json_object_get(r, "windows"), 0), "clients"), 0);
	json_int_t n = json_integer_value(json_object_get(c, "dispatched"));
	/* 5/s over 20 s: about 100 arrivals, all dispatched at once (0.5 seats of 10 used on average). */
	CHECK(n > 60 && n < 140);
	CHECK(fabs(json_real_value(json_object_get(c, "avgSeats")) - 0.5) < 0.2);
	json_decref(r);
	expect_error("{\"clients\": [{\"name\":\"a\", \"threads\": 0}]}",
		     "clients[0].threads: must be an integer in [1, 100000] for a closed-loop client (rate 0)");
	expect_error("{\"clients\": [{\"name\":\"a\", \"threads\": 0, \"rate\": 0}]}", "clients[0].threads");
}

/* The heavy client's average seats in workers2_local_weighted_spread.json
 * run with the given placement. */
static double spread_heavy_seats(const char *placement)
{
	char path[1024], err[512] = "";
	snprintf(path, sizeof(path), "%s/workers2_local_weighted_spread.json", scenario_dir);
	json_t *scn = json_load_file(path, 0, NULL);
	CHECK(scn != NULL);
	if (!scn)
		return -1;
	json_object_set_new(scn, "placement", json_string(placement));
	json_object_del(scn, "expect");
	char *text = json_dumps(scn, JSON_COMPACT);
	struct fg_sim *s = fg_sim_load((const uint8_t *)text, strlen(text), err, sizeof(err));
	free(text);
	json_decref(scn);
	CHECK(s != NULL);
	if (!s)
		return -1;
	json_t *r = fg_sim_run(s);
	json_t *c = json_array_get(json_object_get(json_array_get(json_object_get(r, "windows"), 0), "clients"), 0);
	double seats = json_real_value(json_object_get(c, "avgSeats"));
	json_decref(r);
	fg_sim_free(s);
	return seats;
}

/* `connections` spreads a client's threads over the workers: the heavy
 * client alternates between workers 0 and 1, so with "local" placement
 * worker 1's equal local split gives it 10/3 seats; weighted by the round's
 * shares ("localWeighted") it gets its 2. */
TEST(connections_spread_a_flow_over_workers)
{
	CHECK(fabs(spread_heavy_seats("local") - 10.0 / 3) < 0.1);
	CHECK(fabs(spread_heavy_seats("localWeighted") - 2.0) < 0.1);
}

int main_tests(void);
#define main main_tests
TEST_MAIN
#undef main

int main(int argc, char **argv)
{
	scenario_dir = argc > 1 ? argv[1] : "tests/scenarios";
	return main_tests();
}
