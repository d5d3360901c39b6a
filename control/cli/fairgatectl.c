/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fairgatectl — the control CLI (docs/control.md): status, version, apply,
 * diff, delete, get, history, rollback, and validate/explain, which also work
 * offline on a file.
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
#include "settings_table.h"
#include "statusview.h"
#include "top.h"
#include "cli.h"

void ctl_usage(FILE *f)
{
	fprintf(f,
		"usage: fairgatectl [--socket PATH] COMMAND [options]\n"
		"\n"
		"commands:\n"
		"  status [-o table|json] [--watch SECONDS] [--count N] [--level LEVEL] [--flow TEXT]\n"
		"         [--sort name|received|rejected|waiting|executing|responded|rate|reject-rate] [--top N]\n"
		"                             levels, flows (with their rejects by reason) and counters of the\n"
		"                             running daemon; --watch repeats every SECONDS (rates from the deltas)\n"
		"  apply -f FILE|- [--strict] [--prune] [--dry-run[=server|client|none]]\n"
		"                             merge the file's objects into the live set (kubectl apply); --prune:\n"
		"                             the live set becomes the file (as --config reads it); prints per object\n"
		"                             created/configured/unchanged/pruned and every level's seat limits\n"
		"                             before -> after; unknown fields are warnings, errors with --strict\n"
		"  diff -f FILE|- [--prune]   what apply would change; exit 0 none, 1 some, 2 error\n"
		"  delete KIND NAME | delete -f FILE|- [--ignore-not-found]\n"
		"                             remove objects (KIND: flowschema|fs, prioritylevelconfiguration|plc,\n"
		"                             fairsharing|fsh);\n"
		"                             a mandatory object (exempt, catch-all) is restored to its built-in copy\n"
		"  get KIND [NAME] [-o table|json|yaml|wide]\n"
		"                             what is in force, mandatory objects included; FlowSchemas with\n"
		"                             their Dangling condition (MISSINGPL column), fairsharings with their\n"
		"                             policy, weights and DANGLING column; KIND all: every object\n"
		"                             and the settings as one file that applies back; settings: the settings;\n"
		"                             levels -o wide: their NOMINAL, LOWER, UPPER and CURRENT seat limits;\n"
		"                             fairsharings -o wide: each level's busiest flows with their weight,\n"
		"                             usage, seats in use, demand and deserved share\n"
		"  history [-o table|json]    the kept configuration generations: time, uid, summary\n"
		"  rollback [--to GENERATION] make a kept generation (default: the previous) the next one\n"
		"  validate -f FILE|- [--strict] [--base none|live|bootstrap|FILE]\n"
		"                             check a file (objects + FairgateSettings); exit 1 if invalid; offline\n"
		"                             the file is the whole configuration; --base: merged onto the live set\n"
		"                             (asks the daemon), the bootstrap set or another file's configuration\n"
		"  explain --limits [-o table|json]   how each level's seat limit follows from serverConcurrencyLimit,\n"
		"                                    the backends' (learned) capacity and borrowing\n"
		"  explain [-f FILE] --user U [--group G ...] [--namespace NS] [--verb V] [--api-group G]\n"
		"          [--resource R] [--subresource S] [--name N] [--path P] [--untrusted] [--why]\n"
		"          [-o table|json]    where a request goes; with -f offline on that file\n"
		"                             (plus the mandatory objects), else the daemon's configuration\n"
		"                             and the level's state now; --why: why each schema ahead did not match;\n"
		"                             --untrusted: from an untrusted source (--user/--group: the identity\n"
		"                             trust assigns it; the rest are its claims)\n"
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

int ctl_read_all(const char *path, char **out, size_t *len)
{
	int rc = fg_read_file(path, out, len);
	if (rc)
		fprintf(stderr, "fairgatectl: %s: %s\n", path, fg_read_file_strerror(rc));
	else if (fg_input_empty(*out)) {
		fprintf(stderr, "fairgatectl: %s: empty input: no objects and no settings\n", path);
		free(*out);
		*out = NULL;
		rc = -ENODATA;
	}
	return rc;
}

long long ctl_geti(json_t *o, const char *k) { return (long long)json_integer_value(json_object_get(o, k)); }

/* --- YAML output (block style; strings JSON-quoted, which YAML accepts) --- */

void ctl_yaml_scalar(json_t *v)
{
	char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | FG_FC_JSON_REALS);
	printf("%s", t ? t : "null");
	free(t);
}


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
			ctl_yaml_value(v, indent + 2, 0);
		} else {
			printf(" ");
			if (json_is_object(v))
				printf("{}");
			else if (json_is_array(v))
				printf("[]");
			else
				ctl_yaml_scalar(v);
			printf("\n");
		}
	}
}

void ctl_yaml_value(json_t *v, int indent, int in_list)
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
				ctl_yaml_scalar(e);
				printf("\n");
			}
		}
	} else {
		printf("%*s", indent, "");
		ctl_yaml_scalar(v);
		printf("\n");
	}
}

/* --- commands ------------------------------------------------------------ */

const char *ctl_opt_file(int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--filename"))
			return argv[i + 1];
	return NULL;
}

bool ctl_has_flag(int argc, char **argv, const char *flag)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], flag))
			return true;
	return false;
}

/* Warnings the daemon sent with an answer, as kubectl prints them. */
void ctl_print_warnings(json_t *r)
{
	size_t i;
	json_t *w;
	json_array_foreach(json_object_get(r, "warnings"), i, w)
		fprintf(stderr, "Warning: %s\n", json_string_value(w));
}

/* --- what a change does: apply, diff, delete -f, rollback, validate --base --- */

static bool decimal(const char *s, long long *out);

/* kubectl's name for a kind's objects. */
static const char *resource_of(const char *kind)
{
	return !strcmp(kind, "FlowSchema")	    ? "flowschema.flowcontrol.apiserver.k8s.io"
	       : !strcmp(kind, "FairSharing") ? "fairsharing.fairgate.io"
					      : "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io";
}

/* "49", "49 -> 46", "- -> 13" or "13 -> -". */
static void limit_cell(json_t *before, json_t *after, const char *key)
{
	char cell[48];
	long long b = ctl_geti(before, key), a = ctl_geti(after, key);
	if (json_is_null(before))
		snprintf(cell, sizeof(cell), "- -> %lld", a);
	else if (json_is_null(after))
		snprintf(cell, sizeof(cell), "%lld -> -", b);
	else if (a != b)
		snprintf(cell, sizeof(cell), "%lld -> %lld", b, a);
	else
		snprintf(cell, sizeof(cell), "%lld", a);
	printf(" %14s", cell);
}

/*
 * What a change does, from the daemon's (or an offline) answer: one line per
 * object in kubectl's words (created, configured with the fields that
 * change, unchanged, deleted, pruned), the settings that change, and every
 * level's seat limits before -> after.  only_changed: diff's view, without
 * unchanged objects and levels.  Returns whether anything changes.
 */
bool ctl_print_change(json_t *r, const char *suffix, bool only_changed)
{
	json_t *ch = json_object_get(r, "changes"), *o, *f;
	size_t i, k;
	json_array_foreach(json_object_get(ch, "objects"), i, o) {
		const char *action = json_string_value(json_object_get(o, "action"));
		if (only_changed && !strcmp(action, "unchanged"))
			continue;
		printf("%s/%s %s%s\n", resource_of(json_string_value(json_object_get(o, "kind"))),
		       json_string_value(json_object_get(o, "name")), action, suffix);
		json_array_foreach(json_object_get(o, "fields"), k, f)
			printf("    %s\n", json_string_value(f));
	}
	if (ctl_geti(ch, "more"))
		printf("... and %lld more object(s)\n", ctl_geti(ch, "more"));
	json_t *settings = json_object_get(r, "settings");
	if (json_array_size(settings)) {
		printf("fairgatesettings configured%s\n", suffix);
		json_array_foreach(settings, k, f)
			printf("    %s\n", json_string_value(f));
	}
	json_t *levels = json_object_get(r, "levels");
	size_t moved = 0;
	json_array_foreach(levels, i, o)
		moved += json_is_true(json_object_get(o, "changed"));
	if (moved || !only_changed) {
		printf("seat limits, %zu of %zu level(s) change (each level's limit is its share of "
		       "serverConcurrencyLimit over all levels' shares: changing one level moves the others):\n",
		       moved, json_array_size(levels));
		printf("  %-32s %14s %14s %14s\n", "LEVEL", "NOMINAL", "MIN", "MAX");
		json_array_foreach(levels, i, o) {
			if (only_changed && !json_is_true(json_object_get(o, "changed")))
				continue;
			json_t *b = json_object_get(o, "before"), *a = json_object_get(o, "after");
			printf("  %-32s", json_string_value(json_object_get(o, "name")));
			limit_cell(b, a, "nominal");
			limit_cell(b, a, "min");
			limit_cell(b, a, "max");
			printf("\n");
		}
	}
	return json_is_true(json_object_get(r, "changed"));
}

/* The value of "--name VALUE" or "--name=VALUE"; NULL when absent. */
const char *ctl_opt_value(int argc, char **argv, const char *name)
{
	size_t n = strlen(name);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], name) && i + 1 < argc)
			return argv[i + 1];
		if (!strncmp(argv[i], name, n) && argv[i][n] == '=')
			return argv[i] + n + 1;
	}
	return NULL;
}

/* Every argument from argv[first] on must be one of the command's flags:
 * with_value ones take "FLAG VALUE" or "FLAG=VALUE"; a bare one ending in
 * '=' takes only "FLAG=VALUE" (kubectl's --dry-run=server). */
static bool known_args_from(int first, int argc, char **argv, const char *const *with_value, const char *const *bare)
{
	int files = 0;
	for (int i = first; i < argc; i++)
		files += !strcmp(argv[i], "-f") || !strcmp(argv[i], "--filename");
	if (files > 1) { /* never a file silently left out */
		fprintf(stderr, "fairgatectl %s: one -f at a time (apply several files one by one, or as one file "
				"with --- between documents)\n", argv[0]);
		return false;
	}
	for (int i = first; i < argc; i++) {
		bool ok = false;
		for (const char *const *f = with_value; *f && !ok; f++) {
			size_t n = strlen(*f);
			if (!strcmp(argv[i], *f) && i + 1 < argc)
				ok = true, i++;
			else if (!strncmp(argv[i], *f, n) && argv[i][n] == '=')
				ok = true;
		}
		for (const char *const *f = bare; *f && !ok; f++) {
			size_t n = strlen(*f);
			ok = (*f)[n - 1] == '=' ? !strncmp(argv[i], *f, n) : !strcmp(argv[i], *f);
		}
		if (!ok) {
			fprintf(stderr, "fairgatectl %s: unexpected argument \"%s\"\n", argv[0], argv[i]);
			return false;
		}
	}
	return true;
}

bool ctl_known_args(int argc, char **argv, const char *const *with_value, const char *const *bare)
{
	return known_args_from(1, argc, argv, with_value, bare);
}

/* Send a file as "data" with the command's flags; the result or NULL. */
json_t *ctl_send_file(const char *path, const char *command, const char *file, json_t *req, json_t **resp)
{
	char *text;
	size_t len;
	if (ctl_read_all(file, &text, &len)) {
		json_decref(req);
		*resp = NULL;
		return NULL;
	}
	json_object_set_new(req, "command", json_string(command));
	json_object_set_new(req, "data", json_stringn(text, len));
	free(text);
	return fg_ctl_request(path, req, resp);
}

static int cmd_apply(const char *path, int argc, char **argv)
{
	static const char *const with_value[] = { "-f", "--filename", NULL };
	static const char *const bare[] = { "--strict", "--prune", "--dry-run", "--dry-run=", NULL };
	const char *file = ctl_opt_file(argc, argv), *dry = ctl_has_flag(argc, argv, "--dry-run") ? "server" : NULL;
	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "--dry-run=", 10))
			dry = argv[i] + 10;
	if (!ctl_known_args(argc, argv, with_value, bare))
		return 2;
	if (!file) {
		fprintf(stderr, "fairgatectl apply: need -f FILE (or - for stdin)\n");
		return 2;
	}
	if (dry && strcmp(dry, "server") && strcmp(dry, "client") && strcmp(dry, "none")) {
		fprintf(stderr, "fairgatectl apply: --dry-run must be server, client or none (got \"%s\")\n", dry);
		return 2;
	}
	bool is_dry = dry && strcmp(dry, "none");
	json_t *resp, *r = ctl_send_file(path, is_dry ? "validate" : "apply", file,
				     json_pack("{s:b, s:b}", "strict", ctl_has_flag(argc, argv, "--strict"), "prune",
					       ctl_has_flag(argc, argv, "--prune")), &resp);
	if (!r)
		return 1;
	ctl_print_warnings(r);
	bool changed = ctl_print_change(r, is_dry ? " (dry run)" : "", false);
	if (is_dry)
		printf("dry run: nothing was changed; %lld priority levels, %lld flow schemas would be in force\n",
		       ctl_geti(r, "priorityLevels"), ctl_geti(r, "flowSchemas"));
	else
		printf("applied %lld object(s): %lld priority levels, %lld flow schemas in force (configuration generation %lld%s)\n",
		       ctl_geti(r, "objects"), ctl_geti(r, "priorityLevels"), ctl_geti(r, "flowSchemas"), ctl_geti(r, "generation"),
		       changed ? "" : ", unchanged: nothing to publish");
	json_decref(resp);
	return 0;
}

/* diff: what apply -f would change, as kubectl diff: exit 0 when nothing,
 * 1 when something would change, 2 on an error. */
static int cmd_diff(const char *path, int argc, char **argv)
{
	static const char *const with_value[] = { "-f", "--filename", NULL };
	static const char *const bare[] = { "--strict", "--prune", NULL };
	const char *file = ctl_opt_file(argc, argv);
	if (!ctl_known_args(argc, argv, with_value, bare))
		return 2;
	if (!file) {
		fprintf(stderr, "fairgatectl diff: need -f FILE (or - for stdin)\n");
		return 2;
	}
	json_t *resp, *r = ctl_send_file(path, "validate", file,
				     json_pack("{s:b, s:b}", "strict", ctl_has_flag(argc, argv, "--strict"), "prune",
					       ctl_has_flag(argc, argv, "--prune")), &resp);
	if (!r)
		return 2;
	ctl_print_warnings(r);
	bool changed = ctl_print_change(r, "", true);
	if (!changed)
		printf("no differences: %s matches what is in force\n", file);
	json_decref(resp);
	return changed ? 1 : 0;
}

/* delete -f: every object the file names (kubectl delete -f). */
static int cmd_delete_file(const char *path, int argc, char **argv)
{
	static const char *const with_value[] = { "-f", "--filename", NULL };
	static const char *const bare[] = { "--ignore-not-found", NULL };
	if (!ctl_known_args(argc, argv, with_value, bare))
		return 2;
	json_t *resp, *r = ctl_send_file(path, "delete", ctl_opt_file(argc, argv), json_object(), &resp);
	if (!r)
		return 1;
	ctl_print_warnings(r);
	ctl_print_change(r, "", true);
	json_t *o;
	size_t i;
	json_array_foreach(json_object_get(r, "restored"), i, o)
		printf("%s/%s restored: a mandatory object comes back as its built-in copy\n",
		       resource_of(json_string_value(json_object_get(o, "kind"))), json_string_value(json_object_get(o, "name")));
	bool quiet = ctl_has_flag(argc, argv, "--ignore-not-found");
	json_array_foreach(json_object_get(r, "notFound"), i, o)
		if (!quiet)
			fprintf(stderr, "Error from server (NotFound): %s \"%s\" not found\n",
				resource_of(json_string_value(json_object_get(o, "kind"))),
				json_string_value(json_object_get(o, "name")));
	printf("configuration generation %lld%s\n", ctl_geti(r, "generation"),
	       json_is_true(json_object_get(r, "changed")) ? "" : " (unchanged)");
	int rc = json_array_size(json_object_get(r, "notFound")) && !quiet ? 1 : 0;
	json_decref(resp);
	return rc;
}

static int cmd_history(const char *path, int argc, char **argv)
{
	const char *fmt = ctl_output_format(argc, argv, "table");
	static const char *const with_value[] = { "-o", "--output", NULL };
	static const char *const bare[] = { NULL };
	if (!ctl_known_args(argc, argv, with_value, bare) || (strcmp(fmt, "table") && strcmp(fmt, "json"))) {
		fprintf(stderr, "usage: fairgatectl history [-o table|json]\n");
		return 2;
	}
	json_t *resp, *r = fg_ctl_request(path, json_pack("{s:s}", "command", "history"), &resp);
	if (!r)
		return 1;
	if (!ctl_print_json(fmt, r)) {
		json_t *e;
		size_t i;
		printf("%-10s %-20s %-6s %s\n", "GENERATION", "TIME", "UID", "SUMMARY");
		json_array_foreach(json_object_get(r, "items"), i, e) {
			char uid[24];
			snprintf(uid, sizeof(uid), ctl_geti(e, "uid") < 0 ? "-" : "%lld", ctl_geti(e, "uid"));
			printf("%-10lld %-20s %-6s %s%s\n", ctl_geti(e, "generation"), json_string_value(json_object_get(e, "time")),
			       uid, json_string_value(json_object_get(e, "summary")),
			       ctl_geti(e, "generation") == ctl_geti(r, "generation") ? "  (in force)" : "");
		}
	}
	json_decref(resp);
	return 0;
}

static int cmd_rollback(const char *path, int argc, char **argv)
{
	static const char *const with_value[] = { "--to", NULL };
	static const char *const bare[] = { NULL };
	const char *to = ctl_opt_value(argc, argv, "--to");
	long long gen = 0;
	if (!ctl_known_args(argc, argv, with_value, bare))
		return 2;
	if (to && (!decimal(to, &gen) || gen < 1)) {
		fprintf(stderr, "fairgatectl rollback: --to must be a generation number (fairgatectl history lists "
				"them), got \"%s\"\n", to);
		return 2;
	}
	json_t *req = json_pack("{s:s}", "command", "rollback");
	if (to)
		json_object_set_new(req, "to", json_integer(gen));
	json_t *resp, *r = fg_ctl_request(path, req, &resp);
	if (!r)
		return 1;
	ctl_print_warnings(r);
	if (ctl_print_change(r, "", true))
		printf("rolled back to generation %lld: configuration generation %lld\n", ctl_geti(r, "rolledBackTo"),
		       ctl_geti(r, "generation"));
	else
		printf("generation %lld is what is in force: nothing changed (configuration generation %lld)\n",
		       ctl_geti(r, "rolledBackTo"), ctl_geti(r, "generation"));
	json_decref(resp);
	return 0;
}

static int cmd_delete(const char *path, int argc, char **argv)
{
	if (ctl_opt_file(argc, argv))
		return cmd_delete_file(path, argc, argv);
	if (argc != 3 || fg_fc_kind_parse(argv[1]) < 0) {
		/* Say what is wrong with what was typed, then how it goes. */
		if (argc >= 2 && fg_fc_kind_parse(argv[1]) < 0)
			fprintf(stderr, "fairgatectl delete: unknown kind \"%.64s\"\n", argv[1]);
		else if (argc < 3)
			fprintf(stderr, "fairgatectl delete: %s\n", argc < 2 ? "a kind and a name are needed" : "a name is needed");
		else
			fprintf(stderr, "fairgatectl delete: one object at a time (got %d arguments; -f FILE deletes several)\n",
				argc - 1);
		fprintf(stderr, "usage: fairgatectl delete flowschema|prioritylevelconfiguration|fairsharing NAME\n");
		return 2;
	}
	json_t *resp, *r = fg_ctl_request(path, json_pack("{s:s, s:s, s:s}", "command", "delete", "kind", argv[1], "name", argv[2]),
				   &resp);
	if (!r)
		return 1;
	ctl_print_warnings(r);
	printf("%s %s %s (configuration generation %lld)\n",
	       json_is_true(json_object_get(r, "restored")) ? "restored the built-in copy of mandatory" : "deleted",
	       fg_fc_kind_name((enum fg_fc_kind)fg_fc_kind_parse(argv[1])), argv[2],
	       (long long)json_integer_value(json_object_get(r, "generation")));
	json_decref(resp);
	return 0;
}

const char *ctl_output_format(int argc, char **argv, const char *dflt)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output"))
			return argv[i + 1];
	return dflt;
}

static int cmd_get_all(const char *path, int argc, char **argv);

/* get prioritylevelconfigurations -o wide: the level's limits as status has
 * them (st NULL: not wide; "-" for a level status does not know). */
static void print_limits(json_t *st, const char *name)
{
	if (!st) {
		printf("\n");
		return;
	}
	json_t *lv, *b = NULL;
	size_t i;
	json_array_foreach(json_object_get(st, "priorityLevels"), i, lv) {
		const char *n = json_string_value(json_object_get(lv, "name"));
		if (n && name && !strcmp(n, name))
			b = json_object_get(lv, "borrowing");
	}
	if (!b) {
		printf(" %8s %6s %6s %8s\n", "-", "-", "-", "-");
		return;
	}
	printf(" %8lld %6lld %6lld %8lld\n", (long long)json_integer_value(json_object_get(b, "nominal")),
	       (long long)json_integer_value(json_object_get(b, "lower")),
	       (long long)json_integer_value(json_object_get(b, "upper")),
	       (long long)json_integer_value(json_object_get(b, "current")));
}

static int cmd_get(const char *path, int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "all") || !strcmp(argv[1], "settings")))
		return cmd_get_all(path, argc, argv);
	int kind = argc >= 2 ? fg_fc_kind_parse(argv[1]) : -1;
	const char *name = argc >= 3 && argv[2][0] != '-' ? argv[2] : NULL;
	const char *fmt = ctl_output_format(argc, argv, "table");
	bool wide = !strcmp(fmt, "wide") && (kind == FG_FC_PRIORITYLEVEL || kind == FG_FC_FAIRSHARING);
	if (wide)
		fmt = "table";
	if (kind < 0 || (strcmp(fmt, "table") && strcmp(fmt, "json") && strcmp(fmt, "yaml"))) {
		if (argc >= 2 && kind < 0)
			fprintf(stderr, "fairgatectl: get: unknown kind \"%s\"\n", argv[1]);
		else if (argc >= 2)
			fprintf(stderr, "fairgatectl: get: unknown output format \"%s\"\n", fmt);
		fprintf(stderr, "usage: fairgatectl get flowschema|prioritylevelconfiguration|fairsharing|all|settings "
				"[NAME] "
				"[-o table|json|yaml|wide]\n");
		return 2;
	}
	/* -o wide: the limits in force (borrowing.md), or a level's busiest flows
	 * against their deserved shares (sharingview.h), from status. */
	json_t *st_resp = NULL, *st = wide ? fg_ctl_request(path, json_pack("{s:s}", "command", "status"), &st_resp) : NULL;
	if (wide && !st)
		return 1;
	json_t *req = json_pack("{s:s, s:s}", "command", "get", "kind", argv[1]);
	if (name)
		json_object_set_new(req, "name", json_string(name));
	json_t *resp, *r = fg_ctl_request(path, req, &resp);
	if (!r)
		return 1;
	json_t *items = json_object_get(r, "items"), *o;
	size_t i;
	if (!strcmp(fmt, "json")) {
		json_dumpf(name ? json_array_get(items, 0) : r, stdout, JSON_INDENT(2) | FG_FC_JSON_REALS);
		printf("\n");
	} else if (!strcmp(fmt, "yaml")) {
		ctl_yaml_value(name ? json_array_get(items, 0) : r, 0, 0);
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
	} else if (kind == FG_FC_FAIRSHARING) {
		printf("%-28s %-10s %-10s %7s %-8s\n", "NAME", "POLICY", "HALF-LIFE", "WEIGHTS", "DANGLING");
		json_array_foreach(items, i, o) {
			json_t *spec = json_object_get(o, "spec");
			json_t *cond = json_array_get(json_object_get(json_object_get(o, "status"), "conditions"), 0);
			const char *dangling = json_string_value(json_object_get(cond, "status"));
			const char *fsh_name = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
			printf("%-28s %-10s %-10s %7zu %-8s\n", fsh_name, json_string_value(json_object_get(spec, "policy")),
			       json_string_value(json_object_get(spec, "usageHalfLifeTime")),
			       json_array_size(json_object_get(spec, "flowWeights")), dangling ? dangling : "?");
			if (wide)
				fg_ctl_print_busiest_flows(st, fsh_name);
		}
	} else {
		printf("%-28s %-8s %8s %8s %6s %6s %8s", "NAME", "TYPE", "SHARES", "LENDABLE", "QUEUES", "HAND", "QLENGTH");
		printf(wide ? " %8s %6s %6s %8s\n" : "\n", "NOMINAL", "LOWER", "UPPER", "CURRENT");
		json_array_foreach(items, i, o) {
			json_t *spec = json_object_get(o, "spec");
			int exempt = !strcmp(json_string_value(json_object_get(spec, "type")), "Exempt");
			json_t *b = json_object_get(spec, exempt ? "exempt" : "limited");
			json_t *q = json_object_get(json_object_get(b, "limitResponse"), "queuing");
			printf("%-28s %-8s %8lld %7lld%% ", json_string_value(json_object_get(json_object_get(o, "metadata"), "name")),
			       exempt ? "Exempt" : "Limited", (long long)json_integer_value(json_object_get(b, "nominalConcurrencyShares")),
			       (long long)json_integer_value(json_object_get(b, "lendablePercent")));
			if (q)
				printf("%6lld %6lld %8lld", (long long)json_integer_value(json_object_get(q, "queues")),
				       (long long)json_integer_value(json_object_get(q, "handSize")),
				       (long long)json_integer_value(json_object_get(q, "queueLengthLimit")));
			else
				printf("%6s %6s %8s", "-", "-", exempt ? "-" : "reject");
			print_limits(wide ? st : NULL, json_string_value(json_object_get(json_object_get(o, "metadata"), "name")));
		}
	}
	json_decref(st_resp);
	json_decref(resp);
	return 0;
}

/* get all: every object in force and the settings as one List that applies
 * back; get settings: the FairgateSettings object.  The table: each object's
 * kind and name, then the settings as --check prints them. */
static int cmd_get_all(const char *path, int argc, char **argv)
{
	const char *fmt = ctl_output_format(argc, argv, "table");
	static const char *const with_value[] = { "-o", "--output", NULL };
	static const char *const bare[] = { NULL };
	if (!known_args_from(2, argc, argv, with_value, bare) ||
	    (strcmp(fmt, "table") && strcmp(fmt, "json") && strcmp(fmt, "yaml"))) {
		fprintf(stderr, "usage: fairgatectl get all|settings [-o table|json|yaml]\n");
		return 2;
	}
	json_t *resp, *r = fg_ctl_request(path, json_pack("{s:s, s:s}", "command", "get", "kind", argv[1]), &resp);
	if (!r)
		return 1;
	if (!strcmp(fmt, "yaml")) {
		ctl_yaml_value(r, 0, 0);
	} else if (!ctl_print_json(fmt, r)) {
		json_t *items = json_object_get(r, "items"), *o, *settings = items ? NULL : r;
		size_t i;
		json_array_foreach(items, i, o) {
			const char *kind = json_string_value(json_object_get(o, "kind"));
			if (!strcmp(kind, "FairgateSettings"))
				settings = o;
			else
				printf("%s/%s\n", resource_of(kind),
				       json_string_value(json_object_get(json_object_get(o, "metadata"), "name")));
		}
		const char *k;
		json_t *v;
		json_object_foreach(json_object_get(settings, "spec"), k, v) {
			char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
			printf("%s%s: %s\n", items ? "fairgatesettings " : "", k, t ? t : "?");
			free(t);
		}
	}
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
			ctl_usage(opt == 'h' ? stdout : stderr);
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
	       ctl_geti(r, "protocol"));
	json_decref(resp);
	return 0;
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
bool ctl_print_json(const char *fmt, json_t *r)
{
	if (strcmp(fmt, "json"))
		return false;
	json_dumpf(r, stdout, JSON_INDENT(2) | FG_FC_JSON_REALS);
	printf("\n");
	return true;
}

static int cmd_pending(const char *path, int argc, char **argv)
{
	const char *fmt = ctl_output_format(argc, argv, "table");
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
	if (!ctl_print_json(fmt, r)) {
		json_t *md = json_object_get(r, "metadata"), *it;
		size_t i;
		printf("priority level %s: %lld waiting, %lld matched%s\n",
		       json_string_value(json_object_get(md, "priorityLevel")), ctl_geti(md, "waiting"), ctl_geti(md, "matched"),
		       json_is_true(json_object_get(md, "complete")) ? "" : " (incomplete: a buffer filled up)");
		printf("%8s %6s %6s %-28s %-24s %5s %9s %20s %s\n", "POSITION", "QUEUE", "INQ", "FLOWSCHEMA",
		       "DISTINGUISHER", "SEATS", "WAITED", "REQUEST-ID", "CLIENT");
		json_array_foreach(json_object_get(r, "items"), i, it)
			printf("%8lld %6lld %6lld %-28.28s %-24.24s %5lld %8.3fs %20lld %s\n",
			       ctl_geti(it, "positionInPriorityLevel"), ctl_geti(it, "queue"), ctl_geti(it, "positionInQueue"),
			       json_string_value(json_object_get(it, "flowSchema")),
			       json_string_value(json_object_get(it, "distinguisher")), ctl_geti(it, "initialSeats"),
			       json_real_value(json_object_get(it, "waitedSeconds")), ctl_geti(it, "requestId"),
			       json_string_value(json_object_get(it, "client")));
	}
	json_decref(resp);
	return 0;
}

static int cmd_dump(const char *path, int argc, char **argv)
{
	const char *fmt = ctl_output_format(argc, argv, "table");
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
	if (!ctl_print_json(fmt, r))
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
		const char *fmt = ctl_output_format(argc, argv, "table");
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
			ctl_print_json(fmt, json_object_get(r, "backendPool"));
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
	ctl_print_warnings(r);
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
	{ "diff", cmd_diff }, { "history", cmd_history }, { "rollback", cmd_rollback },
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
			ctl_usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			printf("fairgatectl %s (protocol 1)\n", FG_VERSION);
			return 0;
		} else {
			fprintf(stderr, "fairgatectl: unknown option \"%s\"%s\n", argv[i],
				!strcmp(argv[i], "--socket") ? " (it needs a PATH)" : "");
			ctl_usage(stderr);
			return 2;
		}
	}
	if (i == argc) {
		ctl_usage(stderr);
		return 2;
	}
	const char *cmd = argv[i];
	for (int k = i + 1; k < argc; k++)
		if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
			ctl_usage(stdout);
			return 0;
		}
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
		if (!strcmp(cmd, commands[k].name))
			return commands[k].run(path, argc - i, argv + i);
	fprintf(stderr, "fairgatectl: unknown command \"%s\"\n", cmd);
	ctl_usage(stderr);
	return 2;
}
