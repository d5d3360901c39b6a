/* SPDX-License-Identifier: Apache-2.0 */
/* control — control socket server and config publication; see control.h. */
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <urcu-qsbr.h>

#include "clock.h"
#include "defs.h"
#include "settings_table.h"
#include "status.h"

struct conn {
	int fd;
	bool may_mutate;   /* from the peer's credentials (SO_PEERCRED) */
	uint64_t last_ns;
	size_t len, cap;
	char *buf;         /* grows up to FG_CONTROL_MAX_MSG + 1 */
};

struct fg_control {
	struct fg_control_view view;
	int listen_fd;
	int wake[2];
	pthread_t thread;
	struct conn conns[FG_CONTROL_MAX_CLIENTS];
	char path[108];
};

static void free_config_cb(struct rcu_head *h)
{
	fg_config_free(caa_container_of(h, struct fg_config, rcu));
}

void fg_config_publish(struct fg_config **slot, struct fg_config *next)
{
	struct fg_config *old = rcu_xchg_pointer(slot, next);
	if (old)
		call_rcu(&old->rcu, free_config_cb);
}

static char *error_response(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *error_response(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Messages may quote the client's bytes (a JSON parser's complaint, a
	 * command name): keep them printable ASCII so the answer is valid JSON. */
	for (char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
	json_t *o = json_pack("{s:b, s:s}", "ok", 0, "error", msg);
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* Collected lines ("path: reason") as a JSON array of strings. */
static json_t *lines_json(const struct fg_errors *e)
{
	json_t *lines = json_array();
	const char *p = e->text;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		json_array_append_new(lines, json_stringn(p, n));
		p += n + (nl ? 1 : 0);
	}
	return lines;
}

/* A refused configuration: the summary and every error line. */
static char *errors_response(const struct fg_errors *e)
{
	char msg[96];
	snprintf(msg, sizeof(msg), "invalid configuration, %u error(s); nothing was changed", e->count);
	json_t *o = json_pack("{s:b, s:s, s:o}", "ok", 0, "error", msg, "errors", lines_json(e));
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

static char *ok_response(json_t *result)
{
	json_t *o = json_pack("{s:b, s:o}", "ok", 1, "result", result);
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* Settings that shape the process itself cannot change under it (the
 * table's restart-only rows). */
static void check_restart_only(const struct fg_settings *cur, const struct fg_settings *next, struct fg_errors *errs)
{
	for (size_t i = 0; i < fg_settings_table_len; i++) {
		const struct fg_setting *r = &fg_settings_table[i];
		if (r->reloadable || !fg_setting_differs(r, cur, next))
			continue;
		char path[96];
		snprintf(path, sizeof(path), "FairgateSettings: spec.%s", r->name);
		fg_errors_add(errs, path, "cannot change while fairgate runs (restart it)");
	}
}

/* Compile a candidate object set with candidate settings and, unless dry,
 * publish them as the next generation; on success both replace the view's.
 * The candidate always holds the mandatory objects (what `get` shows is what
 * is in force); warnings (unknown fields, dangling schemas) go with the answer. */
static char *commit(const struct fg_control_view *view, struct fg_fc_set *candidate, const struct fg_settings *next_settings,
		    int applied, bool dry, struct fg_errors *warnings, json_t *extra)
{
	struct fg_errors errs = { .len = 0 };
	fg_fc_set_add_mandatory(candidate);
	fg_fc_set_warn_dangling(candidate, warnings);
	struct fg_settings settings = next_settings ? *next_settings : *view->settings;
	check_restart_only(view->settings, &settings, &errs);
	if (!errs.count)
		fg_settings_validate(&settings, &errs);
	struct fg_fc_config *fc = errs.count ? NULL : fg_fc_compile(candidate, settings.seat_limit, &errs);
	if (!fc) {
		fg_fc_set_free(candidate);
		return errs.count ? errors_response(&errs) : error_response("out of memory");
	}
	json_t *summary = json_pack("{s:i, s:i, s:i, s:o}", "objects", applied, "priorityLevels", (int)fc->n_levels,
				    "flowSchemas", (int)fc->n_schemas, "warnings", lines_json(warnings));
	if (extra)
		json_object_update(summary, extra);
	if (dry) {
		fg_fc_config_free(fc);
		fg_fc_set_free(candidate);
		return ok_response(summary);
	}
	rcu_thread_online();
	uint64_t generation = rcu_dereference(*view->config_ptr)->generation + 1;
	struct fg_config *next = fg_settings_compile(&settings, fc, generation);
	if (next)
		fg_config_publish(view->config_ptr, next);
	rcu_thread_offline();
	if (!next) {
		fg_fc_set_free(candidate);
		json_decref(summary);
		return error_response("out of memory");
	}
	/* The set is swapped in place: the view is shared by value with the thread. */
	fg_fc_set_swap(view->objects, candidate);
	fg_fc_set_free(candidate);
	*view->settings = settings;
	json_object_set_new(summary, "generation", json_integer((json_int_t)generation));
	return ok_response(summary);
}

static char *cmd_apply(const struct fg_control_view *view, json_t *req, bool dry)
{
	json_t *data = json_object_get(req, "data");
	if (!json_is_string(data))
		return error_response("%s needs \"data\": the objects as JSON or YAML text", dry ? "validate" : "apply");
	struct fg_fc_set *candidate = dry && json_is_true(json_object_get(req, "standalone")) ? fg_fc_set_new()
											   : fg_fc_set_copy(view->objects);
	json_t *strict = json_object_get(req, "strict");
	if (strict && !json_is_boolean(strict))
		return error_response("\"strict\" must be true or false");
	if (!candidate)
		return error_response("out of memory");
	struct fg_errors errs = { .len = 0 }, warnings = { .len = 0 };
	struct fg_settings settings = *view->settings;
	struct fg_fc_apply_opts opts = { .strict = json_is_true(strict) || view->settings->strict_fields,
					 .warnings = &warnings };
	int n = fg_fc_set_apply_opts(candidate, (const uint8_t *)json_string_value(data), json_string_length(data),
				     &settings, &opts, &errs);
	if (n < 0) {
		fg_fc_set_free(candidate);
		return errors_response(&errs);
	}
	return commit(view, candidate, &settings, n, dry, &warnings, NULL);
}

static int kind_of(json_t *req, char **err)
{
	const char *k = json_string_value(json_object_get(req, "kind"));
	int kind = k ? fg_fc_kind_parse(k) : -1;
	if (kind < 0)
		*err = error_response("\"kind\" must be FlowSchema or PriorityLevelConfiguration (or fs, plc)");
	return kind;
}

static char *cmd_delete(const struct fg_control_view *view, json_t *req)
{
	char *err = NULL;
	int kind = kind_of(req, &err);
	const char *name = json_string_value(json_object_get(req, "name"));
	if (kind < 0)
		return err;
	if (!name)
		return error_response("delete needs \"name\"");
	struct fg_fc_set *candidate = fg_fc_set_copy(view->objects);
	if (!candidate)
		return error_response("out of memory");
	if (fg_fc_set_delete(candidate, (enum fg_fc_kind)kind, name)) {
		fg_fc_set_free(candidate);
		return error_response("%s \"%s\" not found", fg_fc_kind_name((enum fg_fc_kind)kind), name);
	}
	/* As Kubernetes: a deleted mandatory object comes back as its built-in copy. */
	struct fg_errors warnings = { .len = 0 };
	json_t *extra = json_pack("{s:b}", "restored", fg_fc_is_mandatory(name));
	char *out = commit(view, candidate, NULL, 1, false, &warnings, extra);
	json_decref(extra);
	return out;
}

static char *cmd_get(const struct fg_control_view *view, json_t *req)
{
	char *err = NULL;
	int kind = kind_of(req, &err);
	if (kind < 0)
		return err;
	const char *name = json_string_value(json_object_get(req, "name"));
	json_t *items = fg_fc_set_get(view->objects, (enum fg_fc_kind)kind, name);
	if (!items)
		return error_response("%s \"%s\" not found", fg_fc_kind_name((enum fg_fc_kind)kind), name);
	return ok_response(json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List", "items", items));
}

static char *cmd_explain(const struct fg_control_view *view, json_t *req)
{
	struct fg_fc_request r;
	struct fg_str *groups;
	char msg[160];
	if (fg_fc_request_from_json_alloc(json_object_get(req, "request"), &r, &groups, msg, sizeof(msg)))
		return error_response("%s", msg);
	rcu_thread_online();
	json_t *result = fg_fc_explain(rcu_dereference(*view->config_ptr)->fc, &r);
	rcu_thread_offline();
	free(groups);
	return ok_response(result);
}

static char *cmd_status(const struct fg_control_view *view, json_t *req)
{
	(void)req;
	return ok_response(fg_status_json(view));
}

static char *cmd_version(const struct fg_control_view *view, json_t *req)
{
	(void)view;
	(void)req;
	return ok_response(json_pack("{s:s, s:i}", "version", FG_VERSION, "protocol", 1));
}

static char *cmd_validate(const struct fg_control_view *view, json_t *req) { return cmd_apply(view, req, true); }
static char *cmd_apply_live(const struct fg_control_view *view, json_t *req) { return cmd_apply(view, req, false); }

/* The control commands; those that mutate need an admin peer. */
static const struct command {
	const char *name;
	char *(*run)(const struct fg_control_view *view, json_t *req);
	bool mutates;
} commands[] = {
	{ "status", cmd_status, false },     { "version", cmd_version, false }, { "get", cmd_get, false },
	{ "explain", cmd_explain, false },   { "validate", cmd_validate, false }, { "apply", cmd_apply_live, true },
	{ "delete", cmd_delete, true },
};

char *fg_control_handle_line(const struct fg_control_view *view, const uint8_t *line, size_t len, bool may_mutate)
{
	json_error_t jerr;
	json_t *req = json_loadb((const char *)line, len, 0, &jerr);
	if (!req)
		return error_response("malformed JSON at column %d: %s", jerr.column, jerr.text);
	char *out = NULL;
	const char *c = json_string_value(json_object_get(req, "command"));
	const struct command *cmd = NULL;
	for (size_t i = 0; c && i < sizeof(commands) / sizeof(commands[0]) && !cmd; i++)
		if (!strcmp(c, commands[i].name))
			cmd = &commands[i];
	if (!json_is_object(req) || !c)
		out = error_response("request must be an object with a string \"command\"");
	else if (!cmd)
		out = error_response("unknown command \"%.64s\" (known: apply, delete, get, validate, explain, status, "
				     "version)", c);
	else if (cmd->mutates && !may_mutate)
		out = error_response("permission denied: %s needs root or a uid/gid in controlAdmins", c);
	else
		out = cmd->run(view, req);
	json_decref(req);
	return out;
}

static void conn_close(struct conn *c)
{
	close(c->fd);
	c->fd = -1;
	c->len = 0;
	/* Give back what a large request made the buffer grow to. */
	free(c->buf);
	c->buf = NULL;
	c->cap = 0;
}

/* Best effort: a reader that does not drain its socket loses its answer,
 * not the daemon's time (the socket is non-blocking). */
static void conn_reply(struct conn *c, char *resp)
{
	if (!resp) {
		resp = strdup("{\"ok\":false,\"error\":\"out of memory\"}");
		if (!resp)
			return;
	}
	size_t n = strlen(resp);
	resp[n] = '\n';
	ssize_t w = send(c->fd, resp, n + 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)w;
	resp[n] = 0;
	free(resp);
}

static void conn_read(struct fg_control *ctl, struct conn *c, uint64_t now)
{
	if (c->len == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 4096;
		if (cap > FG_CONTROL_MAX_MSG + 1)
			cap = FG_CONTROL_MAX_MSG + 1;
		char *nb = cap > c->cap ? realloc(c->buf, cap) : NULL;
		if (!nb) {
			conn_reply(c, error_response("out of memory for the request"));
			conn_close(c);
			return;
		}
		c->buf = nb;
		c->cap = cap;
	}
	ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			conn_close(c);
		return;
	}
	c->last_ns = now;
	c->len += (size_t)n;
	char *nl;
	while (c->fd >= 0 && (nl = memchr(c->buf, '\n', c->len))) {
		size_t line = (size_t)(nl - c->buf);
		conn_reply(c, fg_control_handle_line(&ctl->view, (const uint8_t *)c->buf, line, c->may_mutate));
		memmove(c->buf, nl + 1, c->len - line - 1);
		c->len -= line + 1;
	}
	if (c->len > FG_CONTROL_MAX_MSG) {
		conn_reply(c, error_response("request line longer than %u bytes", FG_CONTROL_MAX_MSG));
		conn_close(c);
	}
}

static void accept_one(struct fg_control *ctl, uint64_t now)
{
	int fd = accept4(ctl->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	bool admin = false;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0) {
		const struct fg_settings *s = ctl->view.settings;
		admin = cred.uid == 0;
		for (uint32_t i = 0; i < s->n_admin_uids; i++)
			admin |= cred.uid == s->admin_uids[i];
		for (uint32_t i = 0; i < s->n_admin_gids; i++)
			admin |= cred.gid == s->admin_gids[i];
	}
	for (unsigned i = 0; i < FG_CONTROL_MAX_CLIENTS; i++) {
		struct conn *c = &ctl->conns[i];
		if (c->fd < 0) {
			c->fd = fd;
			c->len = 0;
			c->last_ns = now;
			c->may_mutate = admin;
			return;
		}
	}
	struct conn tmp = { .fd = fd };
	conn_reply(&tmp, error_response("too many control clients (at most %u)", FG_CONTROL_MAX_CLIENTS));
	close(fd);
}

static void *control_main(void *arg)
{
	struct fg_control *ctl = arg;
	rcu_register_thread();
	rcu_thread_offline();
	for (;;) {
		struct pollfd pfd[FG_CONTROL_MAX_CLIENTS + 2];
		struct conn *owner[FG_CONTROL_MAX_CLIENTS + 2];
		unsigned n = 0;
		pfd[n] = (struct pollfd){ ctl->wake[0], POLLIN, 0 };
		owner[n++] = NULL;
		pfd[n] = (struct pollfd){ ctl->listen_fd, POLLIN, 0 };
		owner[n++] = NULL;
		for (unsigned i = 0; i < FG_CONTROL_MAX_CLIENTS; i++)
			if (ctl->conns[i].fd >= 0) {
				pfd[n] = (struct pollfd){ ctl->conns[i].fd, POLLIN, 0 };
				owner[n++] = &ctl->conns[i];
			}
		poll(pfd, n, 250);
		if (pfd[0].revents)
			break;
		uint64_t now = fg_now_ns();
		if (pfd[1].revents & POLLIN)
			accept_one(ctl, now);
		for (unsigned i = 2; i < n; i++)
			if (pfd[i].revents)
				conn_read(ctl, owner[i], now);
		for (unsigned i = 0; i < FG_CONTROL_MAX_CLIENTS; i++) {
			struct conn *c = &ctl->conns[i];
			if (c->fd >= 0 && now - c->last_ns > FG_CONTROL_READ_TIMEOUT_MS * FG_NS_PER_MS && c->len) {
				conn_reply(c, error_response("read timeout: incomplete request line"));
				conn_close(c);
			}
		}
	}
	rcu_thread_online();
	rcu_unregister_thread();
	return NULL;
}

/* Refuse to steal a live daemon's socket; remove a stale one. */
static int claim_path(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
		close(fd);
		return -EADDRINUSE;
	}
	if (fd >= 0)
		close(fd);
	unlink(path);
	return 0;
}

static void mkdir_parent(const char *path)
{
	char dir[108];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return;
	*slash = 0;
	for (char *p = dir + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(dir, 0755);
			*p = '/';
		}
	mkdir(dir, 0755);
}

struct fg_control *fg_control_start(const struct fg_control_view *view, char *errbuf, size_t errlen)
{
	struct fg_control *ctl = calloc(1, sizeof(*ctl));
	if (!ctl) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	ctl->view = *view;
	fg_fc_set_add_mandatory(ctl->view.objects); /* get shows what is in force */
	ctl->listen_fd = ctl->wake[0] = ctl->wake[1] = -1;
	for (unsigned i = 0; i < FG_CONTROL_MAX_CLIENTS; i++)
		ctl->conns[i].fd = -1;
	snprintf(ctl->path, sizeof(ctl->path), "%s", view->settings->control_socket);
	mkdir_parent(ctl->path);
	if (claim_path(ctl->path)) {
		snprintf(errbuf, errlen, "control socket %s is in use by another fairgate", ctl->path);
		goto err;
	}
	ctl->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", ctl->path);
	if (ctl->listen_fd < 0 || bind(ctl->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    chmod(ctl->path, 0660) < 0 || listen(ctl->listen_fd, 16) < 0) {
		snprintf(errbuf, errlen, "control socket %s: %s", ctl->path, strerror(errno));
		goto err;
	}
	if (pipe2(ctl->wake, O_CLOEXEC) < 0 || pthread_create(&ctl->thread, NULL, control_main, ctl)) {
		snprintf(errbuf, errlen, "cannot start the control thread: %s", strerror(errno));
		goto err;
	}
	return ctl;
err:
	if (ctl->listen_fd >= 0) {
		close(ctl->listen_fd);
		unlink(ctl->path);
	}
	for (int i = 0; i < 2; i++)
		if (ctl->wake[i] >= 0)
			close(ctl->wake[i]);
	free(ctl);
	return NULL;
}

void fg_control_stop(struct fg_control *ctl)
{
	if (!ctl)
		return;
	ssize_t w = write(ctl->wake[1], "x", 1);
	(void)w;
	pthread_join(ctl->thread, NULL);
	for (unsigned i = 0; i < FG_CONTROL_MAX_CLIENTS; i++) {
		if (ctl->conns[i].fd >= 0)
			conn_close(&ctl->conns[i]);
	}
	close(ctl->listen_fd);
	unlink(ctl->path);
	close(ctl->wake[0]);
	close(ctl->wake[1]);
	fg_fc_set_free(ctl->view.objects); /* the control thread owned the object set */
	free(ctl->view.settings);          /* and its copy of the settings */
	free(ctl);
}
