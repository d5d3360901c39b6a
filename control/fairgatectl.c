/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fairgatectl — the control CLI (docs/control.md): status, version, apply,
 * delete, get, and validate/explain, which also work offline on a file.
 *
 * Exit status: 0 success, 1 the daemon answered with an error (a refused
 * connection included), could not be reached, closed the connection without
 * an answer, or (validate) the configuration is invalid, 2 usage error.  Every
 * 1 comes with a message on stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "defs.h"
#include "flowcontrol.h"
#include "ctlclient.h"
#include "readfile.h"
#include "statusview.h"
#include "top.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fairgatectl [--socket PATH] COMMAND [options]\n"
		"\n"
		"commands:\n"
		"  status [-o table|json] [--watch SECONDS] [--count N] [--level LEVEL] [--flow TEXT]\n"
		"         [--sort name|received|rejected|waiting|executing|responded|rate|reject-rate] [--top N]\n"
		"                             levels, flows (with their rejects by reason) and counters of the\n"
		"                             running daemon; --watch repeats every SECONDS (rates from the deltas)\n"
		"  apply -f FILE|- [--strict] add or replace FlowSchemas and PriorityLevelConfigurations;\n"
		"                             unknown fields are warnings, errors with --strict\n"
		"  delete KIND NAME           remove one (KIND: flowschema|fs, prioritylevelconfiguration|plc);\n"
		"                             a mandatory object (exempt, catch-all) is restored to its built-in copy\n"
		"  get KIND [NAME] [-o table|json|yaml]\n"
		"                             what is in force, mandatory objects included; FlowSchemas with\n"
		"                             their Dangling condition (MISSINGPL column)\n"
		"  validate -f FILE|- [--strict]\n"
		"                             offline: check a file (objects + FairgateSettings); exit 1 if invalid\n"
		"  explain [-f FILE] --user U [--group G ...] [--namespace NS] [--verb V] [--api-group G]\n"
		"          [--resource R] [--subresource S] [--name N] [--path P] [--why] [-o table|json]\n"
		"                             where a request goes; with -f offline on that file\n"
		"                             (plus the mandatory objects), else the daemon's configuration\n"
		"                             and the level's state now; --why: why each schema ahead did not match\n"
		"  top [--interval SECONDS] [--count N]\n"
		"                             a live view: levels (seats as bars), requests and rejects per\n"
		"                             second, the busiest flows, workers; q quits; one line per\n"
		"                             interval without a terminal\n"
		"  pending LEVEL [--flow-schema S] [--distinguisher D] [--limit N] [--offset K] [--details]\n"
		"          [-o table|json]    the level's waiting requests in the order they would be dispatched\n"
		"                             (docs/visibility.md)\n"
		"  dump levels|queues|requests [--details] [-o table|json]\n"
		"                             Kubernetes' APF debug dumps (dump_priority_levels, ...)\n"
		"  backend list [-o table|json]\n"
		"                             each backend: address, administrative state, health, seats, MAC\n"
		"  backend drain|disable|enable ADDR:PORT\n"
		"                             live: drain (no new dispatches, in-flight ones finish), disable\n"
		"                             (the same, and its timeouts no longer eject it), enable\n"
		"  backend add ADDR:PORT[@MAC][,seats=N] | backend remove ADDR:PORT\n"
		"                             change the backends list live (until a reload or restart:\n"
		"                             put it in the --config file too)\n"
		"  version                    the daemon's version\n"
		"\n"
		"  --socket PATH  control socket (default %s, or $FAIRGATE_SOCKET)\n"
		"  --version      this fairgatectl's version (`version` asks the daemon)\n"
		"exit status: 0 ok, 1 error (daemon error, unreachable, invalid configuration), 2 usage\n",
		FG_DEFAULT_CONTROL_SOCKET);
}

static int read_all(const char *path, char **out, size_t *len)
{
	int rc = fg_read_file(path, out, len);
	if (rc)
		fprintf(stderr, "fairgatectl: %s: %s\n", path, fg_read_file_strerror(rc));
	return rc;
}

static long long geti(json_t *o, const char *k) { return (long long)json_integer_value(json_object_get(o, k)); }

/* --- YAML output (block style; strings JSON-quoted, which YAML accepts) --- */

static void yaml_scalar(json_t *v)
{
	char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	printf("%s", t ? t : "null");
	free(t);
}

static void yaml_value(json_t *v, int indent, int in_list);

static void yaml_object(json_t *o, int indent, int first_inline)
{
	const char *k;
	json_t *v;
	int first = 1;
	json_object_foreach(o, k, v) {
		if (!(first && first_inline))
			printf("%*s", indent, "");
		first = 0;
		printf("%s:", k);
		if ((json_is_object(v) && json_object_size(v)) || (json_is_array(v) && json_array_size(v))) {
			printf("\n");
			yaml_value(v, indent + 2, 0);
		} else {
			printf(" ");
			if (json_is_object(v))
				printf("{}");
			else if (json_is_array(v))
				printf("[]");
			else
				yaml_scalar(v);
			printf("\n");
		}
	}
}

static void yaml_value(json_t *v, int indent, int in_list)
{
	(void)in_list;
	if (json_is_object(v)) {
		yaml_object(v, indent, 0);
	} else if (json_is_array(v)) {
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e) {
			printf("%*s- ", indent, "");
			if (json_is_object(e) && json_object_size(e))
				yaml_object(e, indent + 2, 1);
			else {
				yaml_scalar(e);
				printf("\n");
			}
		}
	} else {
		printf("%*s", indent, "");
		yaml_scalar(v);
		printf("\n");
	}
}

/* --- commands ------------------------------------------------------------ */

static const char *opt_file(int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--filename"))
			return argv[i + 1];
	return NULL;
}

static bool has_flag(int argc, char **argv, const char *flag)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], flag))
			return true;
	return false;
}

/* Warnings the daemon sent with an answer, as kubectl prints them. */
static void print_warnings(json_t *r)
{
	size_t i;
	json_t *w;
	json_array_foreach(json_object_get(r, "warnings"), i, w)
		fprintf(stderr, "Warning: %s\n", json_string_value(w));
}

static int cmd_apply(const char *path, int argc, char **argv)
{
	const char *file = opt_file(argc, argv);
	if (!file) {
		fprintf(stderr, "fairgatectl apply: need -f FILE (or - for stdin)\n");
		return 2;
	}
	char *text;
	size_t len;
	if (read_all(file, &text, &len))
		return 1;
	json_t *req = json_pack("{s:s, s:s%, s:b}", "command", "apply", "data", text, len, "strict",
				has_flag(argc, argv, "--strict"));
	json_t *resp, *r = fg_ctl_request(path, req, &resp);
	free(text);
	if (!r)
		return 1;
	print_warnings(r);
	printf("applied %lld object(s): %lld priority levels, %lld flow schemas in force (configuration generation %lld)\n",
	       (long long)json_integer_value(json_object_get(r, "objects")),
	       (long long)json_integer_value(json_object_get(r, "priorityLevels")),
	       (long long)json_integer_value(json_object_get(r, "flowSchemas")),
	       (long long)json_integer_value(json_object_get(r, "generation")));
	json_decref(resp);
	return 0;
}

static int cmd_delete(const char *path, int argc, char **argv)
{
	if (argc != 3 || fg_fc_kind_parse(argv[1]) < 0) {
		fprintf(stderr, "usage: fairgatectl delete flowschema|prioritylevelconfiguration NAME\n");
		return 2;
	}
	json_t *resp, *r = fg_ctl_request(path, json_pack("{s:s, s:s, s:s}", "command", "delete", "kind", argv[1], "name", argv[2]),
				   &resp);
	if (!r)
		return 1;
	print_warnings(r);
	printf("%s %s %s (configuration generation %lld)\n",
	       json_is_true(json_object_get(r, "restored")) ? "restored the built-in copy of mandatory" : "deleted",
	       fg_fc_kind_name((enum fg_fc_kind)fg_fc_kind_parse(argv[1])), argv[2],
	       (long long)json_integer_value(json_object_get(r, "generation")));
	json_decref(resp);
	return 0;
}

static const char *output_format(int argc, char **argv, const char *dflt)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output"))
			return argv[i + 1];
	return dflt;
}

static int cmd_get(const char *path, int argc, char **argv)
{
	int kind = argc >= 2 ? fg_fc_kind_parse(argv[1]) : -1;
	const char *name = argc >= 3 && argv[2][0] != '-' ? argv[2] : NULL;
	const char *fmt = output_format(argc, argv, "table");
	if (kind < 0 || (strcmp(fmt, "table") && strcmp(fmt, "json") && strcmp(fmt, "yaml"))) {
		fprintf(stderr, "usage: fairgatectl get flowschema|prioritylevelconfiguration [NAME] [-o table|json|yaml]\n");
		return 2;
	}
	json_t *req = json_pack("{s:s, s:s}", "command", "get", "kind", argv[1]);
	if (name)
		json_object_set_new(req, "name", json_string(name));
	json_t *resp, *r = fg_ctl_request(path, req, &resp);
	if (!r)
		return 1;
	json_t *items = json_object_get(r, "items"), *o;
	size_t i;
	if (!strcmp(fmt, "json")) {
		json_dumpf(name ? json_array_get(items, 0) : r, stdout, JSON_INDENT(2));
		printf("\n");
	} else if (!strcmp(fmt, "yaml")) {
		yaml_value(name ? json_array_get(items, 0) : r, 0, 0);
	} else if (kind == FG_FC_FLOWSCHEMA) {
		/* kubectl's columns for flowschemas */
		printf("%-36s %-24s %10s %-14s %-8s\n", "NAME", "PRIORITYLEVEL", "PRECEDENCE", "DISTINGUISHER", "MISSINGPL");
		json_array_foreach(items, i, o) {
			json_t *spec = json_object_get(o, "spec");
			const char *dm = json_string_value(json_object_get(json_object_get(spec, "distinguisherMethod"), "type"));
			json_t *cond = json_array_get(json_object_get(json_object_get(o, "status"), "conditions"), 0);
			const char *dangling = json_string_value(json_object_get(cond, "status"));
			printf("%-36s %-24s %10lld %-14s %-8s\n", json_string_value(json_object_get(json_object_get(o, "metadata"), "name")),
			       json_string_value(json_object_get(json_object_get(spec, "priorityLevelConfiguration"), "name")),
			       (long long)json_integer_value(json_object_get(spec, "matchingPrecedence")), dm ? dm : "<none>",
			       dangling ? dangling : "?");
		}
	} else {
		printf("%-28s %-8s %8s %8s %6s %6s %8s\n", "NAME", "TYPE", "SHARES", "LENDABLE", "QUEUES", "HAND", "QLENGTH");
		json_array_foreach(items, i, o) {
			json_t *spec = json_object_get(o, "spec");
			int exempt = !strcmp(json_string_value(json_object_get(spec, "type")), "Exempt");
			json_t *b = json_object_get(spec, exempt ? "exempt" : "limited");
			json_t *q = json_object_get(json_object_get(b, "limitResponse"), "queuing");
			printf("%-28s %-8s %8lld %7lld%% ", json_string_value(json_object_get(json_object_get(o, "metadata"), "name")),
			       exempt ? "Exempt" : "Limited", (long long)json_integer_value(json_object_get(b, "nominalConcurrencyShares")),
			       (long long)json_integer_value(json_object_get(b, "lendablePercent")));
			if (q)
				printf("%6lld %6lld %8lld\n", (long long)json_integer_value(json_object_get(q, "queues")),
				       (long long)json_integer_value(json_object_get(q, "handSize")),
				       (long long)json_integer_value(json_object_get(q, "queueLengthLimit")));
			else
				printf("%6s %6s %8s\n", "-", "-", exempt ? "-" : "reject");
		}
	}
	json_decref(resp);
	return 0;
}

/* Offline: the file's objects (or the bootstrap set when it has none) plus
 * the mandatory ones, compiled with its FairgateSettings' server limit. */
static struct fg_fc_config *compile_file(const char *file, bool strict, struct fg_fc_set **set_out, int *n_objects)
{
	char *text;
	size_t len;
	if (read_all(file, &text, &len))
		return NULL;
	struct fg_settings settings;
	fg_settings_defaults(&settings);
	struct fg_fc_set *set = fg_fc_set_new();
	struct fg_errors errs = { .len = 0 }, warnings = { .len = 0 };
	struct fg_fc_apply_opts opts = { .strict = strict, .warnings = &warnings };
	int n = set ? fg_fc_set_apply_opts(set, (const uint8_t *)text, len, &settings, &opts, &errs) : -ENOMEM;
	free(text);
	struct fg_fc_config *fc = NULL;
	if (n >= 0) {
		if (!fg_fc_set_size(set)) {
			fg_fc_set_free(set);
			set = fg_fc_set_bootstrap();
		}
		fg_fc_set_warn_dangling(set, &warnings);
		fc = fg_fc_compile(set, settings.seat_limit, &errs);
	}
	for (const char *p = warnings.text; *p;) {
		const char *nl = strchr(p, '\n');
		fprintf(stderr, "Warning: %.*s\n", (int)(nl ? nl - p : (long)strlen(p)), p);
		p = nl ? nl + 1 : p + strlen(p);
	}
	if (!fc) {
		fprintf(stderr, "%s: invalid, %u error(s):\n%s", file, errs.count, errs.text);
		fg_fc_set_free(set);
		return NULL;
	}
	*n_objects = n;
	*set_out = set;
	return fc;
}

static int cmd_validate(int argc, char **argv)
{
	const char *file = opt_file(argc, argv);
	if (!file) {
		fprintf(stderr, "fairgatectl validate: need -f FILE (or - for stdin)\n");
		return 2;
	}
	struct fg_fc_set *set;
	int n;
	struct fg_fc_config *fc = compile_file(file, has_flag(argc, argv, "--strict"), &set, &n);
	if (!fc)
		return 1;
	printf("%s: valid, %d object(s); in force with the mandatory objects: %u priority levels, %u flow schemas "
	       "(server limit %u)\n", file, n, fc->n_levels, fc->n_schemas, fc->server_limit);
	for (uint32_t i = 0; i < fc->n_levels; i++) {
		const struct fg_fc_level *l = &fc->levels[i];
		printf("  %-28s nominal %5u  min %5u  max %5u\n", l->name, l->nominal, l->min, l->max);
	}
	fg_fc_config_free(fc);
	fg_fc_set_free(set);
	return 0;
}

static int cmd_explain(const char *path, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "filename", required_argument, 0, 'f' }, { "user", required_argument, 0, 'u' },
		{ "group", required_argument, 0, 'g' }, { "namespace", required_argument, 0, 'n' },
		{ "verb", required_argument, 0, 'v' }, { "api-group", required_argument, 0, 'a' },
		{ "resource", required_argument, 0, 'r' }, { "subresource", required_argument, 0, 's' },
		{ "name", required_argument, 0, 'N' }, { "path", required_argument, 0, 'p' },
		{ "output", required_argument, 0, 'o' }, { "why", no_argument, 0, 'W' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	const char *file = NULL, *fmt = "table";
	bool why = false;
	json_t *rq = json_object(), *groups = json_array();
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "f:o:", opts, NULL)) != -1) {
		const char *key = NULL;
		switch (opt) {
		case 'f': file = optarg; break;
		case 'o': fmt = optarg; break;
		case 'W': why = true; break;
		case 'g': json_array_append_new(groups, json_string(optarg)); break;
		case 'u': key = "user"; break;
		case 'n': key = "namespace"; break;
		case 'v': key = "verb"; break;
		case 'a': key = "apiGroup"; break;
		case 'r': key = "resource"; break;
		case 's': key = "subresource"; break;
		case 'N': key = "name"; break;
		case 'p': key = "path"; break;
		case 'h': usage(stdout); json_decref(rq); json_decref(groups); return 0;
		default: usage(stderr); json_decref(rq); json_decref(groups); return 2;
		}
		if (key)
			json_object_set_new(rq, key, json_string(optarg));
	}
	json_object_set_new(rq, "groups", groups);
	if (!json_object_get(rq, "user") || (strcmp(fmt, "table") && strcmp(fmt, "json"))) {
		fprintf(stderr, "fairgatectl explain: need --user (and -o table|json)\n");
		json_decref(rq);
		return 2;
	}
	json_t *result = NULL, *resp = NULL;
	if (file) {
		struct fg_fc_set *set;
		int n;
		struct fg_fc_config *fc = compile_file(file, has_flag(argc, argv, "--strict"), &set, &n);
		if (fc) {
			struct fg_fc_request r;
			struct fg_str *gs = NULL;
			char msg[160];
			if (fg_fc_request_from_json_alloc(rq, &r, &gs, msg, sizeof(msg)))
				fprintf(stderr, "fairgatectl explain: %s\n", msg);
			else {
				result = fg_fc_explain(fc, &r);
				if (why)
					json_object_set_new(result, "why", fg_fc_explain_why(fc, &r));
			}
			free(gs);
			fg_fc_config_free(fc);
			fg_fc_set_free(set);
		}
		json_decref(rq);
	} else {
		json_t *r = fg_ctl_request(path, json_pack("{s:s, s:o, s:b}", "command", "explain", "request", rq, "why", why),
					   &resp);
		result = json_incref(r);
	}
	if (!result) {
		json_decref(resp);
		return 1;
	}
	if (!strcmp(fmt, "json")) {
		char *t = json_dumps(result, JSON_COMPACT | JSON_PRESERVE_ORDER);
		printf("%s\n", t);
		free(t);
	} else {
		const char *k;
		json_t *v;
		json_object_foreach(result, k, v) {
			if (!strcmp(k, "why") || !strcmp(k, "priorityLevelState"))
				continue;
			printf("%-17s ", k);
			yaml_scalar(v);
			printf("\n");
		}
		json_t *state = json_object_get(result, "priorityLevelState");
		if (state) /* the daemon's: the level as it runs now */
			printf("%-17s seats %lld/%lld in use, %lld waiting, %lld executing\n", "priorityLevelState",
			       geti(state, "seatsInUse"), geti(state, "seatLimit"), geti(state, "waiting"),
			       geti(state, "executing"));
		size_t i;
		json_array_foreach(json_object_get(result, "why"), i, v) {
			if (!i)
				printf("schemas ahead of the match, and why each did not match:\n");
			printf("  %s (%s): %s\n", json_string_value(json_object_get(v, "flowSchema")),
			       json_string_value(json_object_get(v, "priorityLevel")),
			       json_string_value(json_object_get(v, "reason")));
		}
	}
	json_decref(result);
	json_decref(resp);
	return 0;
}

static int cmd_top(const char *path, int argc, char **argv)
{
	double interval = 1;
	long count = -1;
	static const struct option opts[] = { { "interval", required_argument, 0, 'i' },
		{ "count", required_argument, 0, 'n' }, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char *end;
		switch (opt) {
		case 'i':
			interval = strtod(optarg, &end);
			if (*end || !(interval >= 0.1 && interval <= 3600)) {
				fprintf(stderr, "fairgatectl: top: --interval must be 0.1..3600 seconds, got \"%s\"\n", optarg);
				return 2;
			}
			break;
		case 'n':
			count = strtol(optarg, &end, 10);
			if (*end || count < 1) {
				fprintf(stderr, "fairgatectl: top: --count must be a positive integer, got \"%s\"\n", optarg);
				return 2;
			}
			break;
		default:
			usage(opt == 'h' ? stdout : stderr);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fairgatectl: top: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	return fg_top_run(path, interval, count);
}

static int cmd_version(const char *path, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	char err[512] = "";
	json_t *resp = fg_ctl_call(path, "{\"command\":\"version\"}", err, sizeof(err));
	json_t *r = fg_ctl_result(resp, err, sizeof(err));
	if (!r) {
		fprintf(stderr, "fairgatectl: %s\n", err);
		json_decref(resp);
		return 1;
	}
	printf("fairgatectl %s, fairgate %s (protocol %lld)\n", FG_VERSION, json_string_value(json_object_get(r, "version")),
	       geti(r, "protocol"));
	json_decref(resp);
	return 0;
}

static int cmd_validate_offline(const char *path, int argc, char **argv)
{
	(void)path; /* offline: the daemon is not asked */
	return cmd_validate(argc, argv);
}

/* A plain decimal for --limit/--offset; the daemon checks the range. */
static bool decimal(const char *s, long long *out)
{
	char *end;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return *s >= '0' && *s <= '9' && !*end && !errno;
}

/* -o json: the result as the daemon sent it, indented; false for a table. */
static bool print_json(const char *fmt, json_t *r)
{
	if (strcmp(fmt, "json"))
		return false;
	json_dumpf(r, stdout, JSON_INDENT(2));
	printf("\n");
	return true;
}

static int cmd_pending(const char *path, int argc, char **argv)
{
	const char *fmt = output_format(argc, argv, "table");
	json_t *req = json_pack("{s:s}", "command", "pending");
	const char *level = NULL;
	bool ok = !strcmp(fmt, "table") || !strcmp(fmt, "json");
	for (int i = 1; i < argc && ok; i++) {
		const char *a = argv[i];
		long long n;
		if ((!strcmp(a, "--flow-schema") || !strcmp(a, "--distinguisher")) && i + 1 < argc)
			json_object_set_new(req, a[2] == 'f' ? "flowSchema" : "distinguisher", json_string(argv[++i]));
		else if ((!strcmp(a, "--limit") || !strcmp(a, "--offset")) && i + 1 < argc && decimal(argv[i + 1], &n))
			json_object_set_new(req, a[2] == 'l' ? "limit" : "offset", json_integer(n)), i++;
		else if (!strcmp(a, "--details"))
			json_object_set_new(req, "details", json_true());
		else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && i + 1 < argc)
			i++;
		else if (a[0] != '-' && !level)
			level = a;
		else
			ok = false;
	}
	if (!ok || !level) {
		fprintf(stderr, "usage: fairgatectl pending LEVEL [--flow-schema S] [--distinguisher D] [--limit N] "
				"[--offset K] [--details] [-o table|json]\n");
		json_decref(req);
		return 2;
	}
	json_object_set_new(req, "level", json_string(level));
	json_t *resp, *r = fg_ctl_request(path, req, &resp);
	if (!r)
		return 1;
	if (!print_json(fmt, r)) {
		json_t *md = json_object_get(r, "metadata"), *it;
		size_t i;
		printf("priority level %s: %lld waiting, %lld matched%s\n",
		       json_string_value(json_object_get(md, "priorityLevel")), geti(md, "waiting"), geti(md, "matched"),
		       json_is_true(json_object_get(md, "complete")) ? "" : " (incomplete: a buffer filled up)");
		printf("%8s %6s %6s %-28s %-24s %5s %9s %20s %s\n", "POSITION", "QUEUE", "INQ", "FLOWSCHEMA",
		       "DISTINGUISHER", "SEATS", "WAITED", "REQUEST-ID", "CLIENT");
		json_array_foreach(json_object_get(r, "items"), i, it)
			printf("%8lld %6lld %6lld %-28.28s %-24.24s %5lld %8.3fs %20lld %s\n",
			       geti(it, "positionInPriorityLevel"), geti(it, "queue"), geti(it, "positionInQueue"),
			       json_string_value(json_object_get(it, "flowSchema")),
			       json_string_value(json_object_get(it, "distinguisher")), geti(it, "initialSeats"),
			       json_real_value(json_object_get(it, "waitedSeconds")), geti(it, "requestId"),
			       json_string_value(json_object_get(it, "client")));
	}
	json_decref(resp);
	return 0;
}

static int cmd_dump(const char *path, int argc, char **argv)
{
	const char *fmt = output_format(argc, argv, "table");
	const char *what = argc >= 2 ? argv[1] : "";
	bool details = false, ok = !strcmp(fmt, "table") || !strcmp(fmt, "json");
	for (int i = 2; i < argc && ok; i++) {
		if (!strcmp(argv[i], "--details"))
			details = true;
		else if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc)
			i++;
		else
			ok = false;
	}
	if (!ok || (strcmp(what, "levels") && strcmp(what, "queues") && strcmp(what, "requests"))) {
		fprintf(stderr, "usage: fairgatectl dump levels|queues|requests [--details] [-o table|json]\n");
		return 2;
	}
	json_t *req = json_pack("{s:s, s:s, s:s, s:b}", "command", "dump", "what", what, "format", fmt, "details",
				details);
	json_t *resp, *r = fg_ctl_request(path, req, &resp);
	if (!r)
		return 1;
	if (!print_json(fmt, r))
		fputs(json_string_value(json_object_get(r, "table")), stdout);
	json_decref(resp);
	return 0;
}

/* backend list | drain|disable|enable|remove ADDR:PORT | add ADDR:PORT[@MAC][,seats=N] */
static int cmd_backend(const char *path, int argc, char **argv)
{
	static const char *const actions[] = { "drain", "disable", "enable", "add", "remove" };
	const char *act = argc >= 2 ? argv[1] : "";
	if (!strcmp(act, "list")) {
		const char *fmt = output_format(argc, argv, "table");
		bool ok = (argc == 2 || (argc == 4 && (!strcmp(argv[2], "-o") || !strcmp(argv[2], "--output")))) &&
			  (!strcmp(fmt, "table") || !strcmp(fmt, "json"));
		if (!ok) {
			fprintf(stderr, "usage: fairgatectl backend list [-o table|json]\n");
			return 2;
		}
		json_t *resp, *r = fg_ctl_request(path, json_pack("{s:s}", "command", "status"), &resp);
		if (!r)
			return 1;
		if (!strcmp(fmt, "json"))
			print_json(fmt, json_object_get(r, "backendPool"));
		else
			fg_ctl_print_backends(r);
		json_decref(resp);
		return 0;
	}
	size_t k = 0;
	while (k < sizeof(actions) / sizeof(actions[0]) && strcmp(act, actions[k]))
		k++;
	if (k == sizeof(actions) / sizeof(actions[0]) || argc != 3 || strlen(argv[2]) >= FG_BACKEND_SPEC_MAX) {
		fprintf(stderr, "usage: fairgatectl backend list [-o table|json]\n"
				"       fairgatectl backend drain|disable|enable|remove ADDR:PORT\n"
				"       fairgatectl backend add ADDR:PORT[@MAC][,seats=N]\n");
		return 2;
	}
	json_t *resp, *r = fg_ctl_request(path, json_pack("{s:s, s:s, s:s}", "command", "backend", "action", act,
							 "address", argv[2]), &resp);
	if (!r)
		return 1;
	print_warnings(r);
	const char *name = json_string_value(json_object_get(r, "backend"));
	printf("backend %s: %s (configuration generation %lld)\n", name ? name : argv[2], act,
	       (long long)json_integer_value(json_object_get(r, "generation")));
	json_decref(resp);
	return 0;
}

static const struct command {
	const char *name;
	int (*run)(const char *socket_path, int argc, char **argv);
} commands[] = {
	{ "backend", cmd_backend },
	{ "status", fg_ctl_status }, { "apply", cmd_apply },       { "delete", cmd_delete },
	{ "get", cmd_get },       { "validate", cmd_validate_offline }, { "explain", cmd_explain },
	{ "version", cmd_version }, { "top", cmd_top }, { "pending", cmd_pending }, { "dump", cmd_dump },
};

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN); /* a closed connection is an error to report (send_all), not a death */
	const char *path = getenv("FAIRGATE_SOCKET");
	if (!path)
		path = FG_DEFAULT_CONTROL_SOCKET;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc)
			path = argv[++i];
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			printf("fairgatectl %s (protocol 1)\n", FG_VERSION);
			return 0;
		} else {
			fprintf(stderr, "fairgatectl: unknown option \"%s\"%s\n", argv[i],
				!strcmp(argv[i], "--socket") ? " (it needs a PATH)" : "");
			usage(stderr);
			return 2;
		}
	}
	if (i == argc) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[i];
	for (int k = i + 1; k < argc; k++)
		if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
			usage(stdout);
			return 0;
		}
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
		if (!strcmp(cmd, commands[k].name))
			return commands[k].run(path, argc - i, argv + i);
	fprintf(stderr, "fairgatectl: unknown command \"%s\"\n", cmd);
	usage(stderr);
	return 2;
}
