/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli — what fairgatectl's files share (fairgatectl.c: the command table,
 * the daemon's commands; validate.c: validate and explain, on a file or the
 * daemon's configuration): reading inputs, options, printing answers.
 * Program-internal: the prefix is ctl_, not fg_.
 *
 * Thread contract: one thread (the CLI's).
 */
#ifndef FG_CLI_H
#define FG_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The usage text. */
void ctl_usage(FILE *f);
/* A whole input file (a path or "-"); 0, or an error printed and -errno
 * (-ENODATA for an input with nothing in it). */
int ctl_read_all(const char *path, char **out, size_t *len);
long long ctl_geti(json_t *o, const char *k);
/* YAML output: a scalar as JSON (which YAML reads), a value in block style. */
void ctl_yaml_scalar(json_t *v);
void ctl_yaml_value(json_t *v, int indent, int in_list);
/* Options: -f/--filename's value, a bare flag, --name's value. */
const char *ctl_opt_file(int argc, char **argv);
bool ctl_has_flag(int argc, char **argv, const char *flag);
const char *ctl_opt_value(int argc, char **argv, const char *name);
/* Whether every argument is a known option (with_value take one); the
 * first unknown one is named on stderr. */
bool ctl_known_args(int argc, char **argv, const char *const *with_value, const char *const *bare);
/* -o's value (table, json, yaml...), or dflt. */
const char *ctl_output_format(int argc, char **argv, const char *dflt);
/* The daemon's warnings, as kubectl prints them. */
void ctl_print_warnings(json_t *r);
/* What a change does (per object and the levels' limits before -> after);
 * false when the answer says nothing changed. */
bool ctl_print_change(json_t *r, const char *suffix, bool only_changed);
/* -o json: the answer as JSON; false when fmt is not json. */
bool ctl_print_json(const char *fmt, json_t *r);
/* Send a file's text as request req's "data" with command; the answer's
 * result (NULL: an error printed), *resp the whole answer. */
json_t *ctl_send_file(const char *path, const char *command, const char *file, json_t *req, json_t **resp);

/* validate.c */
int cmd_validate(const char *path, int argc, char **argv);
int cmd_validate_offline(const char *path, int argc, char **argv);
int cmd_explain(const char *path, int argc, char **argv);

/* limits.c: explain --limits, from the daemon's status (-o table|json). */
int ctl_explain_limits(const char *path, const char *fmt);

#endif
