/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon_args — fairgate's command line: the flags of the settings table
 * (common/objects/settings_table.h) plus --config, --check, --help, --help-settings
 * and --version; the objects of --config files; what --check prints.
 *
 * Layers: defaults, then each --config file in order (its FairgateSettings
 * and objects), then the flags.  A --config without FlowSchemas or levels
 * leaves the Kubernetes bootstrap set in force.
 *
 * Thread contract: start-up only, from main.
 */
#ifndef FG_DAEMON_ARGS_H
#define FG_DAEMON_ARGS_H

#include <stdbool.h>

#include "flowcontrol.h"
#include "settings.h"

#define FG_DAEMON_MAX_CONFIG_FILES 16u

struct fg_daemon_args {
	struct fg_settings settings;
	struct fg_fc_set *objects; /* in force at start: --config's objects or the bootstrap set */
	bool check_only;           /* --check: print and exit */
	const char *config_paths[FG_DAEMON_MAX_CONFIG_FILES]; /* the --config files in order (argv's), for SIGHUP */
	unsigned n_config_paths;
	struct fg_errors warnings;  /* the files' and the settings' warnings, logged once the log format is known */
};

enum { FG_ARGS_RUN = 0, FG_ARGS_DONE = 1, FG_ARGS_BAD = 2 };

/* Parse the daemon's own arguments (those before "--").  FG_ARGS_RUN, or
 * FG_ARGS_DONE after --help/--version/--help-settings (exit 0), or FG_ARGS_BAD
 * after printing why (exit 2).  Warnings (unknown fields, dangling schemas)
 * go to stderr.  fg_daemon_args_fini frees what a parse left. */
int fg_daemon_args_parse(int argc, char **argv, struct fg_daemon_args *a);
void fg_daemon_args_fini(struct fg_daemon_args *a);

/* What --check prints: the merged settings, the levels with their derived
 * limits, the schemas in matching order. */
void fg_daemon_print_check(const struct fg_settings *s, const struct fg_fc_config *fc);

#endif
