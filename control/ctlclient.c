/* SPDX-License-Identifier: Apache-2.0 */
/* ctlclient — the client side of the control socket; see ctlclient.h. */
#include "ctlclient.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Write all of buf; 0 or -errno.  MSG_NOSIGNAL: a daemon that has closed
 * the connection gives EPIPE here, not a silent death by SIGPIPE. */
static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EPIPE;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Why the socket could not be reached, and what to try. */
static void unreachable(const char *path, int e, char *err, size_t errlen)
{
	struct stat st;
	if (e == EACCES && !stat(path, &st))
		snprintf(err, errlen,
			 "cannot reach fairgate at %s: permission denied (the socket is mode %03o, owner %u, group %u; "
			 "you are uid %u: the daemon's controlSocketGroup and controlSocketMode decide who may connect)",
			 path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)st.st_gid, (unsigned)geteuid());
	else if (e == ENOENT || e == ECONNREFUSED)
		snprintf(err, errlen,
			 "cannot reach fairgate at %s: %s (is it running? another socket: --socket PATH or "
			 "FAIRGATE_SOCKET)", path, strerror(e));
	else
		snprintf(err, errlen, "cannot reach fairgate at %s: %s", path, strerror(e));
}

/* Send one request line, read one response line.  NULL + message on error.
 * A daemon that refuses the connection (too many clients, idle timeout)
 * writes why and closes: that line is read and returned even when writing
 * the request failed. */
json_t *fg_ctl_call(const char *path, const char *request, char *err, size_t errlen)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		unreachable(path, errno, err, errlen);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	int werr = send_all(fd, request, strlen(request));
	if (!werr)
		werr = send_all(fd, "\n", 1);
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	json_t *resp = NULL;
	for (;;) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		if (!buf) {
			snprintf(err, errlen, "out of memory");
			break;
		}
		if (poll(&pfd, 1, 5000) <= 0) {
			snprintf(err, errlen, "no answer from %s within 5 s", path);
			break;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n <= 0) {
			if (werr)
				snprintf(err, errlen,
					 "fairgate at %s closed the connection before taking the request (%s)", path,
					 strerror(-werr));
			else if (len)
				snprintf(err, errlen, "connection closed by %s in the middle of an answer (%zu bytes)",
					 path, len);
			else
				snprintf(err, errlen, "connection closed by %s without an answer%s%s", path,
					 n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
			break;
		}
		len += (size_t)n;
		char *nl = memchr(buf + len - (size_t)n, '\n', (size_t)n);
		if (nl) {
			json_error_t je;
			resp = json_loadb(buf, (size_t)(nl - buf), 0, &je);
			if (!resp)
				snprintf(err, errlen, "malformed answer: %s", je.text);
			break;
		}
		if (len == cap) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	free(buf);
	close(fd);
	return resp;
}

json_t *fg_ctl_result(json_t *resp, char *err, size_t errlen)
{
	if (!resp)
		return NULL;
	if (!json_is_true(json_object_get(resp, "ok"))) {
		const char *e = json_string_value(json_object_get(resp, "error"));
		int n = snprintf(err, errlen, "fairgate: %s", e ? e : "unknown error");
		json_t *lines = json_object_get(resp, "errors"), *l;
		size_t i;
		json_array_foreach(lines, i, l)
			if (n > 0 && (size_t)n < errlen)
				n += snprintf(err + n, errlen - (size_t)n, "\n  %s", json_string_value(l));
		return NULL;
	}
	return json_object_get(resp, "result");
}

json_t *fg_ctl_request(const char *path, json_t *req, json_t **resp_out)
{
	char *text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	static char err[1 << 16];
	err[0] = 0;
	json_t *resp = text ? fg_ctl_call(path, text, err, sizeof(err)) : NULL;
	free(text);
	json_t *r = fg_ctl_result(resp, err, sizeof(err));
	if (!r) {
		fprintf(stderr, "fairgatectl: %s\n", err[0] ? err : "out of memory");
		json_decref(resp);
		*resp_out = NULL;
		return NULL;
	}
	*resp_out = resp;
	return r;
}

