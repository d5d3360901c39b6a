/* SPDX-License-Identifier: Apache-2.0 */
/* daemon_args — fairgate's command line; see daemon_args.h. */
#include "daemon_args.h"
#include "log.h"

#include <getopt.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "defs.h"
#include "readfile.h"
#include "settings_table.h"

/* Flags of the daemon itself; the settings' flags follow, from the table. */
enum { OPT_CONFIG = 256, OPT_CHECK, OPT_HELP, OPT_HELP_SETTINGS, OPT_VERSION, OPT_SETTING = 1024 };

static const struct option own_opts[] = {
	{ "config", required_argument, 0, OPT_CONFIG }, { "check", no_argument, 0, OPT_CHECK },
	{ "help", no_argument, 0, OPT_HELP },            { "help-settings", no_argument, 0, OPT_HELP_SETTINGS },
	{ "version", no_argument, 0, OPT_VERSION },
};
#define N_OWN (sizeof(own_opts) / sizeof(own_opts[0]))

/* getopt's table: the daemon's flags, then one per settings row with a flag. */
static void build_options(struct option *opts)
{
	size_t n = 0;
	for (size_t i = 0; i < N_OWN; i++)
		opts[n++] = own_opts[i];
	for (size_t i = 0; i < fg_settings_table_len; i++) {
		const struct fg_setting *r = &fg_settings_table[i];
		if (r->flag)
			opts[n++] = (struct option){ r->flag, r->type == FG_SET_BOOL ? optional_argument : required_argument, 0,
						     OPT_SETTING + (int)i };
	}
	opts[n] = (struct option){ 0, 0, 0, 0 };
}

/* "  LEFT  text..." with text wrapped at 100 columns under a 27-column margin. */
static void print_wrapped(FILE *f, const char *left, const char *text)
{
	enum { MARGIN = 27, WIDTH = 100 };
	int col = fprintf(f, "  %s", left);
	if (col >= MARGIN) {
		fprintf(f, "\n");
		col = 0;
	}
	fprintf(f, "%*s", MARGIN - col, "");
	col = MARGIN;
	for (const char *p = text; *p;) {
		const char *sp = strchr(p, ' ');
		int n = sp ? (int)(sp - p) : (int)strlen(p);
		if (col > MARGIN && col + 1 + n > WIDTH) {
			fprintf(f, "\n%*s", MARGIN, "");
			col = MARGIN;
		} else if (col > MARGIN) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%.*s", n, p);
		col += n;
		p += n + (sp ? 1 : 0);
	}
	fputc('\n', f);
}

static void check_backends_are_not_self(const struct fg_settings *s, struct fg_errors *errs);

static void usage(FILE *f)
{
	static const char *const values[] = { [FG_SET_U32] = "N", [FG_SET_DURATION] = "DURATION", [FG_SET_BOOL] = "[=true|false]",
					      [FG_SET_ENUM] = "VALUE", [FG_SET_ENDPOINT] = "ADDR:PORT",
					      [FG_SET_OPT_LISTEN] = "ADDR:PORT|off", [FG_SET_PATH] = "PATH", [FG_SET_GROUP] = "GROUP", [FG_SET_MODE] = "MODE",
					      [FG_SET_NAME] = "NAME", [FG_SET_URLS] = "URL[,URL...]",
					      [FG_SET_BACKENDS] = "ADDR:PORT[@MAC][,seats=N]",
					      [FG_SET_ADMINS] = "", [FG_SET_CIDRS] = "A.B.C.D/N",
					      [FG_SET_IDENTITIES] = "" };
	struct fg_settings d;
	char v[512], left[96], text[1024];
	fg_settings_defaults(&d);
	fprintf(f, "usage: fairgate [options] [-- EAL args]\n"
		   "\n"
		   "A priority-and-fairness request dispatcher (KEP-1040) for UDP request traffic.\n"
		   "Settings come from the defaults, then --config, then the flags below.\n"
		   "\n"
		   "  --config FILE            FairgateSettings, FlowSchema and PriorityLevelConfiguration\n"
		   "                           objects, JSON or YAML (docs/configuration.md); without\n"
		   "                           FlowSchemas/levels the Kubernetes bootstrap set is used\n");
	for (size_t i = 0; i < fg_settings_table_len; i++) {
		const struct fg_setting *r = &fg_settings_table[i];
		if (!r->flag)
			continue;
		char names[64] = "";
		for (int k = 0; r->type == FG_SET_ENUM && r->names[k]; k++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", k ? "|" : "", r->names[k]);
		snprintf(left, sizeof(left), r->type == FG_SET_BOOL ? "--%s%s" : "--%s %s", r->flag, r->type == FG_SET_ENUM ? names : values[r->type]);
		snprintf(text, sizeof(text), "%s: %s (default %s)", r->name, r->doc,
			 r->type == FG_SET_BACKENDS && !d.n_backends ? "none" : fg_setting_format(r, &d, v, sizeof(v)));
		print_wrapped(f, left, text);
	}
	fprintf(f, "  --check                  validate the settings and objects, print them, exit\n"
		   "  --help-settings          the settings as a Markdown table (docs/configuration.md)\n"
		   "  --help, --version\n"
		   "\n"
		   "DPDK mode: EAL arguments follow '--', e.g.\n"
		   "  fairgate --io dpdk --listen 192.0.2.2:7400 -- --no-huge -m 512 --no-pci \\\n"
		   "      --no-shconf --file-prefix=fg1 --vdev=net_tap0,iface=fgtap0\n"
		   "Exit status: 0 clean shutdown, 1 runtime failure, 2 bad settings.\n");
}

/* Warnings, one "Warning: ..." line each, as kubectl prints them. */
/* Start-up warnings go to the log, in the format the settings chose. */
static void print_warnings(const struct fg_settings *s, const struct fg_errors *w)
{
	fg_log_configure((enum fg_log_format)s->log_format, (enum fg_log_level)s->log_level);
	for (const char *p = w->text; *p;) {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);
		fg_logf(FG_LOG_WARN, "Warning: %.*s", n, p);
		p += n + (nl ? 1 : 0);
	}
}

static int load_config(struct fg_daemon_args *a, const char *path, bool strict)
{
	char *buf;
	size_t len;
	int rc = fg_read_file(path, &buf, &len);
	if (rc) {
		fprintf(stderr, "fairgate: --config %s: %s\n", path, fg_read_file_strerror(rc));
		return FG_ARGS_BAD;
	}
	if (fg_input_empty(buf)) {
		fprintf(stderr, "fairgate: --config %s: empty input: no objects and no settings\n", path);
		free(buf);
		return FG_ARGS_BAD;
	}
	struct fg_errors errs = { .len = 0 };
	struct fg_fc_apply_opts opts = { .strict = strict, .warnings = &a->warnings };
	rc = fg_fc_set_apply_opts(a->objects, (const uint8_t *)buf, len, &a->settings, &opts, &errs);
	free(buf);
	if (rc < 0) {
		print_warnings(&a->settings, &a->warnings);
		fprintf(stderr, "fairgate: %s: %u error(s):\n%s", path, errs.count, errs.text);
		return FG_ARGS_BAD;
	}
	return FG_ARGS_RUN;
}

int fg_daemon_args_parse(int argc, char **argv, struct fg_daemon_args *a)
{
	struct option opts[N_OWN + fg_settings_table_len + 1];
	struct fg_errors errs = { .len = 0 };
	bool strict = false;
	int opt;
	build_options(opts);
	memset(a, 0, sizeof(*a));
	fg_settings_defaults(&a->settings);
	if (!(a->objects = fg_fc_set_new())) {
		fprintf(stderr, "fairgate: out of memory\n");
		return FG_ARGS_BAD;
	}
	/* Pass 1: --strict-fields (it governs how the files are read), then
	 * the files in order, so that the flags of pass 2 win over them. */
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1)
		if (opt >= OPT_SETTING && fg_settings_table[opt - OPT_SETTING].type == FG_SET_BOOL &&
		    !strcmp(fg_settings_table[opt - OPT_SETTING].name, "strictFields"))
			strict = !optarg || !strcmp(optarg, "true");
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt != OPT_CONFIG)
			continue;
		if (a->n_config_paths == FG_DAEMON_MAX_CONFIG_FILES) {
			fprintf(stderr, "fairgate: at most %u --config files\n", FG_DAEMON_MAX_CONFIG_FILES);
			return FG_ARGS_BAD;
		}
		a->config_paths[a->n_config_paths++] = optarg;
		if (load_config(a, optarg, strict || a->settings.strict_fields))
			return FG_ARGS_BAD;
	}
	bool list_from_flags[FG_SETTINGS_MAX_ROWS] = { false }; /* the first flag of a list replaces the file's */
	optind = 1;
	opterr = 1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_CONFIG:
			continue;
		case OPT_CHECK:
			a->check_only = true;
			continue;
		case OPT_HELP:
			usage(stdout);
			return FG_ARGS_DONE;
		case OPT_HELP_SETTINGS:
			fg_settings_print_markdown(stdout);
			return FG_ARGS_DONE;
		case OPT_VERSION:
			printf("fairgate %s (protocol 1)\n", FG_VERSION);
			return FG_ARGS_DONE;
		default:
			if (opt < OPT_SETTING) {
				usage(stderr);
				return FG_ARGS_BAD;
			}
		}
		const struct fg_setting *r = &fg_settings_table[opt - OPT_SETTING];
		char why[256];
		if (fg_setting_is_list(r) && !list_from_flags[opt - OPT_SETTING]) {
			list_from_flags[opt - OPT_SETTING] = true;
			fg_setting_clear_list(r, &a->settings); /* flags replace the file's list */
		}
		if (fg_setting_set_text(r, &a->settings, optarg ? optarg : "true", why, sizeof(why))) {
			fprintf(stderr, "fairgate: invalid value for --%s: \"%s\": spec.%s: %s\n", r->flag, optarg ? optarg : "",
				r->name, why);
			return FG_ARGS_BAD;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fairgate: unexpected argument \"%s\" (EAL arguments follow \"--\")\n", argv[optind]);
		return FG_ARGS_BAD;
	}
	fg_settings_validate(&a->settings, &errs);
	check_backends_are_not_self(&a->settings, &errs);
	if (errs.count) {
		fprintf(stderr, "fairgate: invalid settings, %u error(s):\n%s", errs.count, errs.text);
		return FG_ARGS_BAD;
	}
	if (fg_fc_set_or_bootstrap(a->objects)) { /* no schemas and levels in the files: the bootstrap ones */
		fprintf(stderr, "fairgate: out of memory\n");
		return FG_ARGS_BAD;
	}
	fg_fc_set_warn_dangling(a->objects, &a->warnings);
	fg_settings_warn_capacity(&a->settings, &a->warnings); /* at start-up and with --check */
	print_warnings(&a->settings, &a->warnings);
	return FG_ARGS_RUN;
}

/* A socket-mode listen on 0.0.0.0 also receives at the host's interface
 * addresses: a backend at one of them on the listen port is fairgate itself. */
static void check_backends_are_not_self(const struct fg_settings *s, struct fg_errors *errs)
{
	struct ifaddrs *ifs;
	if (s->io != FG_IO_SOCKET || s->listen.ip != 0 || getifaddrs(&ifs))
		return;
	for (uint32_t i = 0; i < s->n_backends; i++) {
		if (s->backends[i].ep.port != s->listen.port || fg_ip_is_loopback(s->backends[i].ep.ip))
			continue; /* loopback is refused by fg_settings_validate already */
		for (struct ifaddrs *p = ifs; p; p = p->ifa_next)
			if (p->ifa_addr && p->ifa_addr->sa_family == AF_INET &&
			    ((struct sockaddr_in *)p->ifa_addr)->sin_addr.s_addr == s->backends[i].ep.ip) {
				char path[64];
				snprintf(path, sizeof(path), "spec.backends[%u]", i);
				fg_errors_add(errs, path, "is this host's address %s on the listen port: fairgate would send "
					      "requests to itself", p->ifa_name);
				break;
			}
	}
	freeifaddrs(ifs);
}

void fg_daemon_args_fini(struct fg_daemon_args *a)
{
	fg_fc_set_free(a->objects);
	a->objects = NULL;
}

void fg_daemon_print_check(const struct fg_settings *s, const struct fg_fc_config *fc)
{
	char v[1024];
	for (size_t i = 0; i < fg_settings_table_len; i++)
		printf("%s: %s\n", fg_settings_table[i].name, fg_setting_format(&fg_settings_table[i], s, v, sizeof(v)));
	printf("priorityLevels:\n");
	for (uint32_t i = 0; i < fc->n_levels; i++) {
		const struct fg_fc_level *l = &fc->levels[i];
		printf("  - %s: %s, nominal %u seats (min %u, max %u)", l->name,
		       l->exempt ? "Exempt" : l->reject ? "Limited/Reject" : "Limited/Queue", l->nominal, l->min, l->max);
		if (l->queues)
			printf(", %u queues, hand %u, %u per queue, at most %u seats a request", l->queues, l->hand_size,
			       l->queue_length_limit, l->max_seats);
		printf("\n");
	}
	printf("flowSchemas (matching order):");
	for (uint32_t i = 0; i < fc->n_schemas; i++)
		printf(" %s", fc->schema_names[i]);
	printf("\n");
}
