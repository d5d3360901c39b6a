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
#include "status.h"

struct conn {
	int fd;
	uint64_t last_ns;
	size_t len;
	char *buf; /* FG_CONTROL_MAX_MSG + 1 */
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
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *o = json_pack("{s:b, s:s}", "ok", 0, "error", msg);
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

char *fg_control_handle_line(const struct fg_control_view *view, const uint8_t *line, size_t len)
{
	json_error_t jerr;
	json_t *req = json_loadb((const char *)line, len, 0, &jerr);
	if (!req)
		return error_response("malformed JSON at column %d: %s", jerr.column, jerr.text);
	char *out;
	json_t *cmd = json_object_get(req, "command");
	if (!json_is_object(req) || !json_is_string(cmd)) {
		out = error_response("request must be an object with a string \"command\"");
	} else if (!strcmp(json_string_value(cmd), "status")) {
		out = ok_response(fg_status_json(view));
	} else if (!strcmp(json_string_value(cmd), "version")) {
		out = ok_response(json_pack("{s:s, s:i}", "version", FG_VERSION, "protocol", 1));
	} else {
		out = error_response("unknown command \"%.64s\" (known: status, version)", json_string_value(cmd));
	}
	json_decref(req);
	return out;
}

static void conn_close(struct conn *c)
{
	close(c->fd);
	c->fd = -1;
	c->len = 0;
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
	ssize_t n = recv(c->fd, c->buf + c->len, FG_CONTROL_MAX_MSG + 1 - c->len, MSG_DONTWAIT);
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
		conn_reply(c, fg_control_handle_line(&ctl->view, (const uint8_t *)c->buf, line));
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
	for (unsigned i = 0; i < FG_CONTROL_MAX_CLIENTS; i++) {
		struct conn *c = &ctl->conns[i];
		if (c->fd < 0) {
			c->fd = fd;
			c->len = 0;
			c->last_ns = now;
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
	ctl->listen_fd = ctl->wake[0] = ctl->wake[1] = -1;
	for (unsigned i = 0; i < FG_CONTROL_MAX_CLIENTS; i++) {
		ctl->conns[i].fd = -1;
		ctl->conns[i].buf = malloc(FG_CONTROL_MAX_MSG + 1);
		if (!ctl->conns[i].buf) {
			snprintf(errbuf, errlen, "out of memory");
			goto err;
		}
	}
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
	for (unsigned i = 0; i < FG_CONTROL_MAX_CLIENTS; i++)
		free(ctl->conns[i].buf);
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
			close(ctl->conns[i].fd);
		free(ctl->conns[i].buf);
	}
	close(ctl->listen_fd);
	unlink(ctl->path);
	close(ctl->wake[0]);
	close(ctl->wake[1]);
	free(ctl);
}
