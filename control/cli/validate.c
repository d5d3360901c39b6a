/* SPDX-License-Identifier: Apache-2.0 */
/*
 * validate — `fairgatectl validate` and `explain`: a file's configuration
 * checked (whole, or merged onto the live set, the bootstrap set or another
 * file's) and where a request goes, offline on a file or asked of the
 * daemon; see cli.h.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ctlclient.h"
#include "defs.h"
#include "flowcontrol.h"
#include "readfile.h"
#include "settings_table.h"

static void print_error_lines(const struct fg_errors *w, const char *prefix)
{
	for (const char *p = w->text; *p;) {
		const char *nl = strchr(p, '\n');
		fprintf(stderr, "%s%.*s\n", prefix, (int)(nl ? nl - p : (long)strlen(p)), p);
		p = nl ? nl + 1 : p + strlen(p);
	}
}

/* Apply a file onto a set and settings (the file's FairgateSettings over
 * them); input, when not NULL, receives the file's objects.  The number of
 * objects, or -1 after printing the errors (warnings are printed too). */
static int apply_file(const char *file, bool strict, struct fg_fc_set *set, struct fg_settings *settings,
		      struct fg_fc_set *input)
{
	char *text;
	size_t len;
	if (ctl_read_all(file, &text, &len))
		return -1;
	struct fg_errors errs = { .len = 0 }, warnings = { .len = 0 };
	struct fg_fc_apply_opts opts = { .strict = strict, .warnings = &warnings, .input = input };
	int n = fg_fc_set_apply_opts(set, (const uint8_t *)text, len, settings, &opts, &errs);
	free(text);
	print_error_lines(&warnings, "Warning: ");
	if (n < 0)
		fprintf(stderr, "%s: invalid, %u error(s):\n%s", file, errs.count, errs.text);
	return n < 0 ? -1 : n;
}

/* A file's one meaning (configuration.md): its objects, or the bootstrap set
 * when it has none, with its settings over the defaults. */
static int whole_set(const char *file, bool strict, struct fg_fc_set **set_out, struct fg_settings *settings)
{
	fg_settings_defaults(settings);
	struct fg_fc_set *set = fg_fc_set_new();
	int n = set ? apply_file(file, strict, set, settings, NULL) : -1;
	if (n >= 0 && fg_fc_set_or_bootstrap(set))
		n = -1;
	if (n < 0 || !set) {
		fg_fc_set_free(set);
		return -1;
	}
	*set_out = set;
	return n;
}

/* Offline: the file's whole meaning compiled with its server limit. */
static struct fg_fc_config *compile_file(const char *file, bool strict, struct fg_fc_set **set_out, int *n_objects)
{
	struct fg_settings settings;
	struct fg_fc_set *set;
	int n = whole_set(file, strict, &set, &settings);
	if (n < 0)
		return NULL;
	struct fg_errors errs = { .len = 0 }, warnings = { .len = 0 };
	fg_fc_set_warn_dangling(set, &warnings);
	print_error_lines(&warnings, "Warning: ");
	struct fg_fc_config *fc = fg_fc_compile(set, settings.seat_limit, &errs);
	if (!fc) {
		fprintf(stderr, "%s: invalid, %u error(s):\n%s", file, errs.count, errs.text);
		fg_fc_set_free(set);
		return NULL;
	}
	*n_objects = n;
	*set_out = set;
	return fc;
}

/* validate --base bootstrap|FILE, offline: the file applied (merged, as
 * `apply -f` does) onto that base, with what it changes there. */
static int validate_offline_base(const char *file, const char *base, bool strict)
{
	struct fg_fc_set *bset = NULL, *cset = NULL, *input = fg_fc_set_new();
	struct fg_settings bs, cs;
	struct fg_errors errs = { .len = 0 }, warnings = { .len = 0 };
	int rc = 1, n = -1;
	if (!strcmp(base, "bootstrap")) {
		fg_settings_defaults(&bs);
		bset = fg_fc_set_bootstrap();
	} else if (whole_set(base, strict, &bset, &bs) < 0) {
		fprintf(stderr, "fairgatectl validate: --base %s is not a valid configuration\n", base);
		goto out;
	}
	fg_fc_set_add_mandatory(bset);
	cs = bs;
	cset = bset ? fg_fc_set_copy(bset) : NULL;
	if (!cset || !input || (n = apply_file(file, strict, cset, &cs, input)) < 0)
		goto out;
	fg_fc_set_add_mandatory(cset);
	fg_fc_set_warn_dangling(cset, &warnings);
	fg_settings_validate(&cs, &errs);
	struct fg_fc_config *before = fg_fc_compile(bset, bs.seat_limit, &warnings);
	struct fg_fc_config *after = errs.count ? NULL : fg_fc_compile(cset, cs.seat_limit, &errs);
	print_error_lines(&warnings, "Warning: ");
	if (after) {
		json_t *sdiff = fg_settings_diff(&bs, &cs);
		json_t *r = json_pack("{s:o, s:o, s:o, s:b}", "changes", fg_fc_set_diff(bset, cset, input, "deleted"),
				      "levels", fg_fc_levels_diff(before, after), "settings", sdiff, "changed",
				      !fg_fc_set_equal(bset, cset) || json_array_size(sdiff));
		ctl_print_change(r, "", false);
		json_decref(r);
		printf("%s: valid, %d object(s); applied onto %s%s (merged, as `fairgatectl apply -f` does): %u priority "
		       "levels, %u flow schemas (server limit %u)\n", file, n, base,
		       strcmp(base, "bootstrap") ? "'s configuration" : " set", after->n_levels, after->n_schemas,
		       after->server_limit);
		rc = 0;
	} else {
		fprintf(stderr, "%s: invalid, %u error(s):\n%s", file, errs.count, errs.text);
	}
	fg_fc_config_free(before);
	fg_fc_config_free(after);
out:
	fg_fc_set_free(bset);
	fg_fc_set_free(cset);
	fg_fc_set_free(input);
	return rc;
}

/* validate --base live: the daemon's dry run of `apply -f`. */
static int validate_live(const char *path, const char *file, bool strict)
{
	json_t *resp, *r = ctl_send_file(path, "validate", file, json_pack("{s:b}", "strict", strict), &resp);
	if (!r)
		return 1;
	ctl_print_warnings(r);
	ctl_print_change(r, " (dry run)", false);
	printf("%s: valid; applied onto the live set (merged, as `fairgatectl apply -f` does): %lld priority levels, "
	       "%lld flow schemas would be in force\n", file, ctl_geti(r, "priorityLevels"), ctl_geti(r, "flowSchemas"));
	json_decref(resp);
	return 0;
}

int cmd_validate(const char *path, int argc, char **argv)
{
	static const char *const with_value[] = { "-f", "--filename", "--base", NULL };
	static const char *const bare[] = { "--strict", NULL };
	const char *file = ctl_opt_file(argc, argv), *base = ctl_opt_value(argc, argv, "--base");
	bool strict = ctl_has_flag(argc, argv, "--strict");
	if (!ctl_known_args(argc, argv, with_value, bare))
		return 2;
	if (!file) {
		fprintf(stderr, "fairgatectl validate: need -f FILE (or - for stdin)\n");
		return 2;
	}
	if (base && !strcmp(base, "live"))
		return validate_live(path, file, strict);
	if (base && strcmp(base, "none"))
		return validate_offline_base(file, base, strict);
	struct fg_fc_set *set;
	int n;
	struct fg_fc_config *fc = compile_file(file, strict, &set, &n);
	if (!fc)
		return 1;
	printf("%s: valid, %d object(s); in force with the mandatory objects: %u priority levels, %u flow schemas "
	       "(server limit %u)\n", file, n, fc->n_levels, fc->n_schemas, fc->server_limit);
	for (uint32_t i = 0; i < fc->n_levels; i++) {
		const struct fg_fc_level *l = &fc->levels[i];
		printf("  %-28s nominal %5u  min %5u  max %5u\n", l->name, l->nominal, l->min, l->max);
	}
	printf("(the file as the whole configuration, as `fairgate --config` and `fairgatectl apply --prune -f` take "
	       "it; `fairgatectl apply -f` merges it into the live set instead: `--base live` shows that result)\n");
	fg_fc_config_free(fc);
	fg_fc_set_free(set);
	return 0;
}

int cmd_explain(const char *path, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "filename", required_argument, 0, 'f' }, { "user", required_argument, 0, 'u' },
		{ "group", required_argument, 0, 'g' }, { "namespace", required_argument, 0, 'n' },
		{ "verb", required_argument, 0, 'v' }, { "api-group", required_argument, 0, 'a' },
		{ "resource", required_argument, 0, 'r' }, { "subresource", required_argument, 0, 's' },
		{ "name", required_argument, 0, 'N' }, { "path", required_argument, 0, 'p' },
		{ "output", required_argument, 0, 'o' }, { "why", no_argument, 0, 'W' },
		{ "limits", no_argument, 0, 'L' },
		{ "untrusted", no_argument, 0, 'T' }, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	const char *file = NULL, *fmt = "table";
	bool why = false, limits = false;
	json_t *rq = json_object(), *groups = json_array();
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "f:o:", opts, NULL)) != -1) {
		const char *key = NULL;
		switch (opt) {
		case 'f': file = optarg; break;
		case 'o': fmt = optarg; break;
		case 'W': why = true; break;
		case 'L': limits = true; break;
		case 'T': json_object_set_new(rq, "untrusted", json_true()); break;
		case 'g': json_array_append_new(groups, json_string(optarg)); break;
		case 'u': key = "user"; break;
		case 'n': key = "namespace"; break;
		case 'v': key = "verb"; break;
		case 'a': key = "apiGroup"; break;
		case 'r': key = "resource"; break;
		case 's': key = "subresource"; break;
		case 'N': key = "name"; break;
		case 'p': key = "path"; break;
		case 'h': ctl_usage(stdout); json_decref(rq); json_decref(groups); return 0;
		default: ctl_usage(stderr); json_decref(rq); json_decref(groups); return 2;
		}
		if (key)
			json_object_set_new(rq, key, json_string(optarg));
	}
	json_object_set_new(rq, "groups", groups);
	if (limits) { /* the daemon's limits, not a request's classification */
		json_decref(rq);
		if (file || (strcmp(fmt, "table") && strcmp(fmt, "json"))) {
			fprintf(stderr, "fairgatectl explain --limits: asks the daemon (no -f), -o table|json\n");
			return 2;
		}
		return ctl_explain_limits(path, fmt);
	}
	if (!json_object_get(rq, "user") || (strcmp(fmt, "table") && strcmp(fmt, "json"))) {
		fprintf(stderr, "fairgatectl explain: need --user (and -o table|json)\n");
		json_decref(rq);
		return 2;
	}
	json_t *result = NULL, *resp = NULL;
	if (file) {
		struct fg_fc_set *set;
		int n;
		struct fg_fc_config *fc = compile_file(file, ctl_has_flag(argc, argv, "--strict"), &set, &n);
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
		char *t = json_dumps(result, JSON_COMPACT | JSON_PRESERVE_ORDER | FG_FC_JSON_REALS);
		printf("%s\n", t);
		free(t);
	} else {
		const char *k;
		json_t *v;
		json_object_foreach(result, k, v) {
			if (!strcmp(k, "why") || !strcmp(k, "priorityLevelState"))
				continue;
			printf("%-17s ", k);
			ctl_yaml_scalar(v);
			printf("\n");
		}
		json_t *state = json_object_get(result, "priorityLevelState");
		if (state) /* the daemon's: the level as it runs now */
			printf("%-17s seats %lld/%lld in use, %lld waiting, %lld executing\n", "priorityLevelState",
			       ctl_geti(state, "seatsInUse"), ctl_geti(state, "seatLimit"), ctl_geti(state, "waiting"),
			       ctl_geti(state, "executing"));
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


int cmd_validate_offline(const char *path, int argc, char **argv)
{
	return cmd_validate(path, argc, argv); /* offline unless --base live */
}
