/* SPDX-License-Identifier: Apache-2.0 */
/* control — the control thread: the socket, its connections and peers, SIGHUP reloads; see control.h
 * (the commands themselves: commands.c). */
#include "control_int.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>
#include <urcu-qsbr.h>

#include "clock.h"
#include "defs.h"
#include "log.h"
#include "load.h"
#include "logwatch.h"
#include "readfile.h"

/* A peer's credentials as the kernel recorded them at connect. */
struct peer {
	struct fg_control_peer id; /* id.known false: SO_PEERCRED failed; the peer has no rights */
	unsigned n_groups;
	gid_t *groups;     /* supplementary groups (malloc'd) */
};

struct conn {
	int fd;
	bool closing;      /* close once the output is written; read nothing more */
	struct peer peer;
	uint64_t last_ns;    /* last byte moved either way */
	uint64_t partial_ns; /* since when an incomplete request line waits */
	size_t len, cap;
	char *buf;         /* input; grows up to FG_CONTROL_MAX_MSG + 1 */
	char *out;         /* answers not yet written: out[out_off..out_len) */
	size_t out_len, out_off;
};

struct fg_control {
	struct fg_control_view view;
	int listen_fd;
	int wake[2];
	pthread_t thread;
	struct conn conns[FG_CONTROL_MAX_CLIENTS];
	size_t queued;     /* output bytes waiting, all connections */
	bool bound;        /* the path is our socket (sock_dev, sock_ino) */
	dev_t sock_dev;
	ino_t sock_ino;
	char path[108];
	struct fg_logwatch watch;  /* the workers' events, into the log */
	uint64_t load_due_ns;      /* answerLoad: when the LOAD values are next published (load.h) */
};

/* --- peers ----------------------------------------------------------------- */

/* Read the peer's credentials as they were at connect: uid, gid and the
 * supplementary groups.  SO_PEERGROUPS (Linux 4.13) gives the groups the
 * process really had; without it, the uid's groups in the group database
 * stand in.  A peer whose credentials cannot be read gets no rights. */
static void peer_read(int fd, struct peer *p)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	*p = (struct peer){ .id.known = false };
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return;
	p->id.uid = cred.uid;
	p->id.gid = cred.gid;
	p->id.known = true;
#ifdef SO_PEERGROUPS
	len = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, NULL, &len) == 0 || errno == ERANGE) {
		/* The first call only sizes the list (ERANGE with the length). */
		p->groups = len ? malloc(len) : NULL;
		if (p->groups && getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, p->groups, &len) == 0)
			p->n_groups = len / sizeof(gid_t);
		return;
	}
	if (errno != ENOPROTOOPT)
		return;
#endif
	struct passwd pw, *found = NULL;
	char pwbuf[1024];
	int n = 0;
	if (getpwuid_r(p->id.uid, &pw, pwbuf, sizeof(pwbuf), &found) || !found)
		return;
	getgrouplist(found->pw_name, p->id.gid, NULL, &n);
	p->groups = n > 0 ? calloc((size_t)n, sizeof(gid_t)) : NULL;
	if (p->groups && getgrouplist(found->pw_name, p->id.gid, p->groups, &n) >= 0)
		p->n_groups = (unsigned)n;
}

static bool in_list(uint32_t id, const uint32_t *list, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (list[i] == id)
			return true;
	return false;
}

/* Root, a listed uid, or a listed gid as primary or supplementary group. */
static bool peer_is_admin(const struct fg_settings *s, const struct peer *p)
{
	if (!p->id.known)
		return false;
	if (p->id.uid == 0 || in_list(p->id.uid, s->admin_uids, s->n_admin_uids) ||
	    in_list(p->id.gid, s->admin_gids, s->n_admin_gids))
		return true;
	for (unsigned i = 0; i < p->n_groups; i++)
		if (in_list(p->groups[i], s->admin_gids, s->n_admin_gids))
			return true;
	return false;
}

/* --- connections ------------------------------------------------------------ */

static bool conn_has_output(const struct conn *c) { return c->out_off < c->out_len; }

static void conn_close(struct fg_control *ctl, struct conn *c)
{
	close(c->fd);
	ctl->queued -= c->out_len - c->out_off;
	free(c->out);
	/* Give back what a large request made the buffer grow to. */
	free(c->buf);
	free(c->peer.groups);
	*c = (struct conn){ .fd = -1 };
}

/* Write what the socket takes now; the rest waits for POLLOUT.  Closes the
 * connection when the peer is gone, or when it was closing and all is out. */
static void conn_flush(struct fg_control *ctl, struct conn *c, uint64_t now)
{
	while (conn_has_output(c)) {
		ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (w <= 0) {
			conn_close(ctl, c);
			return;
		}
		c->out_off += (size_t)w;
		ctl->queued -= (size_t)w;
		c->last_ns = now;
	}
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	if (c->closing)
		conn_close(ctl, c);
}

/* Queue an answer (malloc'd, consumed; NULL: out of memory) with its
 * newline and start writing it. */
static void conn_reply(struct fg_control *ctl, struct conn *c, char *resp, uint64_t now)
{
	static const char oom[] = "{\"ok\":false,\"error\":\"out of memory\"}";
	const char *text = resp ? resp : oom;
	size_t n = strlen(text);
	char *out = realloc(c->out, c->out_len + n + 1);
	if (!out) {
		free(resp);
		conn_close(ctl, c); /* an answer cannot be skipped: the next would be taken for it */
		return;
	}
	memcpy(out + c->out_len, text, n);
	out[c->out_len + n] = '\n';
	c->out = out;
	c->out_len += n + 1;
	ctl->queued += n + 1;
	free(resp);
	conn_flush(ctl, c, now);
}

/* Say why, then close once that is written. */
static void conn_refuse(struct fg_control *ctl, struct conn *c, char *resp, uint64_t now)
{
	c->closing = true;
	conn_reply(ctl, c, resp, now);
}

/* Answer the complete request lines, one at a time: the next waits until
 * the previous answer is written (that bounds a connection's output to one
 * answer).  Rights are looked up per line, against the settings in force. */
static void conn_serve(struct fg_control *ctl, struct conn *c, uint64_t now)
{
	char *nl;
	while (c->fd >= 0 && !c->closing && !conn_has_output(c) && (nl = memchr(c->buf, '\n', c->len))) {
		size_t line = (size_t)(nl - c->buf);
		/* Slow readers may fill the answers' budget; an admin is served
		 * all the same (its own answers are bounded by its slots). */
		bool admin = peer_is_admin(ctl->view.settings, &c->peer);
		char *resp = ctl->queued > FG_CONTROL_MAX_QUEUED && !admin
				     ? fg_control__error("busy: %zu bytes of answers wait for slow readers; try again",
						      ctl->queued)
				     : fg_control__handle(&ctl->view, (const uint8_t *)c->buf, line, admin, &c->peer.id);
		memmove(c->buf, nl + 1, c->len - line - 1);
		c->len -= line + 1;
		c->partial_ns = now;
		conn_reply(ctl, c, resp, now);
	}
}

static void conn_read(struct fg_control *ctl, struct conn *c, uint64_t now)
{
	if (c->len == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 4096;
		if (cap > FG_CONTROL_MAX_MSG + 1)
			cap = FG_CONTROL_MAX_MSG + 1;
		char *nb = cap > c->cap ? realloc(c->buf, cap) : NULL;
		if (!nb) {
			conn_refuse(ctl, c, fg_control__error("out of memory for the request"), now);
			return;
		}
		c->buf = nb;
		c->cap = cap;
	}
	ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			conn_close(ctl, c);
		return;
	}
	if (!c->len)
		c->partial_ns = now;
	c->last_ns = now;
	c->len += (size_t)n;
	conn_serve(ctl, c, now);
	if (c->fd >= 0 && !c->closing && c->len > FG_CONTROL_MAX_MSG)
		conn_refuse(ctl, c, fg_control__error("request line longer than %u bytes", FG_CONTROL_MAX_MSG), now);
}

/* Close what has been quiet too long: a partial request line after the
 * read timeout, any connection after the idle timeout (with a last word
 * when the peer is still reading). */
static void conn_check_timeouts(struct fg_control *ctl, struct conn *c, uint64_t now)
{
	if (now - c->last_ns > FG_CONTROL_IDLE_TIMEOUT_MS * FG_NS_PER_MS) {
		if (conn_has_output(c) || c->closing)
			conn_close(ctl, c); /* not reading: nothing more can reach it */
		else
			conn_refuse(ctl, c,
				    fg_control__error("idle timeout: no request for %u s; connection closed",
						   FG_CONTROL_IDLE_TIMEOUT_MS / 1000),
				    now);
	} else if (c->len && !conn_has_output(c) && !c->closing &&
		   now - c->partial_ns > FG_CONTROL_READ_TIMEOUT_MS * FG_NS_PER_MS) {
		conn_refuse(ctl, c, fg_control__error("read timeout: incomplete request line"), now);
	}
}

/* Best effort for a connection that gets no slot: one short line into an
 * empty socket buffer does not block. */
static void refuse_unslotted(int fd, const char *fmt, unsigned a, unsigned b)
{
	char *resp = fg_control__error(fmt, a, b);
	if (resp) {
		size_t n = strlen(resp);
		resp[n] = '\n'; /* over the NUL: the length is known */
		ssize_t w = send(fd, resp, n + 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w;
		free(resp);
	}
	close(fd);
}

/* Admins may take any free slot, others all but FG_CONTROL_ADMIN_SLOTS of
 * them: readers, however many, cannot lock an admin out.  Rights are those in
 * force now (an admin removed from controlAdmins counts as a reader at once),
 * and an admin who finds every slot taken displaces the reader idle longest. */
static void accept_one(struct fg_control *ctl, int fd, uint64_t now)
{
	struct peer peer;
	peer_read(fd, &peer);
	bool admin = peer_is_admin(ctl->view.settings, &peer);
	struct conn *slot = NULL, *idlest_reader = NULL;
	unsigned others = 0;
	for (unsigned i = 0; i < FG_CONTROL_MAX_CLIENTS; i++) {
		struct conn *c = &ctl->conns[i];
		if (c->fd < 0) {
			slot = slot ? slot : c;
		} else if (!peer_is_admin(ctl->view.settings, &c->peer)) {
			others++;
			if (!idlest_reader || c->last_ns < idlest_reader->last_ns)
				idlest_reader = c;
		}
	}
	if (!admin && others >= FG_CONTROL_MAX_CLIENTS - FG_CONTROL_ADMIN_SLOTS)
		slot = NULL;
	if (admin && !slot && idlest_reader) {
		conn_close(ctl, idlest_reader); /* without a word: its slot is needed now */
		slot = idlest_reader;
	}
	int64_t uid = peer.id.known ? (int64_t)peer.id.uid : -1, gid = peer.id.known ? (int64_t)peer.id.gid : -1;
	if (!slot) {
		static struct fg_log_burst refusals = { .window_ns = FG_CONTROL_DENIAL_LOG_WINDOW_NS,
							.max = FG_CONTROL_DENIAL_LOG_MAX };
		uint64_t suppressed;
		if (fg_log_burst_allow(&refusals, now, &suppressed))
			fg_log(FG_LOG_WARN, "control connection refused: too many control clients", FG_LOG_INT("uid", uid),
			       FG_LOG_INT("gid", gid), FG_LOG_UINT("suppressedBefore", suppressed));
		free(peer.groups);
		refuse_unslotted(fd, "too many control clients (at most %u; %u more are kept for admins)",
				 FG_CONTROL_MAX_CLIENTS - FG_CONTROL_ADMIN_SLOTS, FG_CONTROL_ADMIN_SLOTS);
		return;
	}
	fg_log(FG_LOG_DEBUG, "control connection", FG_LOG_INT("uid", uid), FG_LOG_INT("gid", gid),
	       FG_LOG_BOOL("admin", admin));
	*slot = (struct conn){ .fd = fd, .peer = peer, .last_ns = now, .partial_ns = now };
}

/* --- SIGHUP: re-apply the --config files -------------------------------------- */

static void log_lines(enum fg_log_level level, const char *prefix, json_t *lines)
{
	size_t i;
	json_t *l;
	json_array_foreach(lines, i, l)
		fg_logf(level, "%s%s", prefix, json_string_value(l));
}

/* systemd (Type=notify) sees the reload begin and end; without NOTIFY_SOCKET
 * sd_notify does nothing. */
static void notify_reloading(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
		   (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000u);
}

/* As `fairgatectl apply -f` of each file in turn, as one change: the same
 * answer, told in the log. */
static void reload(struct fg_control *ctl)
{
	const struct fg_control_view *v = &ctl->view;
	unsigned n = 0, failed = UINT_MAX; /* which text had the errors; none: the change as a whole */
	if (!v->n_reload_paths) {
		fg_logf(FG_LOG_WARN, "SIGHUP: no --config file to reload; nothing changed");
		return;
	}
	struct fg_control_text *texts = calloc(v->n_reload_paths, sizeof(*texts));
	if (!texts) {
		fg_logf(FG_LOG_ERROR, "SIGHUP: out of memory; nothing changed");
		return;
	}
	notify_reloading();
	for (; n < v->n_reload_paths; n++) {
		char *buf;
		int rc = fg_read_file(v->reload_paths[n], &buf, &texts[n].len);
		if (rc) {
			fg_logf(FG_LOG_ERROR, "SIGHUP: --config %s: %s; nothing changed", v->reload_paths[n],
				fg_read_file_strerror(rc));
			fg_control__count_change(v, false);
			goto out;
		}
		texts[n].data = buf;
	}
	char *resp = fg_control__reload(v, texts, n, &failed);
	fg_control_log_change("reload", NULL, resp, NULL);
	fg_control__follow_log_settings(v->settings);
	json_t *r = resp ? json_loads(resp, 0, NULL) : NULL;
	free(resp);
	json_t *res = json_object_get(r, "result");
	if (json_is_true(json_object_get(r, "ok"))) {
		log_lines(FG_LOG_WARN, "Warning: ", json_object_get(res, "warnings"));
		fg_logf(FG_LOG_INFO,
			"SIGHUP: reloaded %u --config file(s): %lld object(s), %lld priority levels, "
			"%lld flow schemas in force (configuration generation %lld)",
			n, (long long)json_integer_value(json_object_get(res, "objects")),
			(long long)json_integer_value(json_object_get(res, "priorityLevels")),
			(long long)json_integer_value(json_object_get(res, "flowSchemas")),
			(long long)json_integer_value(json_object_get(res, "generation")));
	} else {
		const char *e = json_string_value(json_object_get(r, "error"));
		if (failed < n)
			fg_logf(FG_LOG_ERROR, "SIGHUP: --config %s refused: %s", v->reload_paths[failed],
				e ? e : "out of memory; nothing was changed");
		else
			fg_logf(FG_LOG_ERROR, "SIGHUP: the --config files refused as a whole: %s",
				e ? e : "out of memory; nothing was changed");
		log_lines(FG_LOG_ERROR, "  ", json_object_get(r, "errors"));
	}
	json_decref(r);
out:
	sd_notify(0, "READY=1");
	for (unsigned i = 0; i < n; i++)
		free((char *)texts[i].data);
	free(texts);
}

/* --- the thread ---------------------------------------------------------------- */

/* Each connection waits for what it needs next: its reader (output pending)
 * or its next request; one that is closing waits only on its output. */
static short conn_events(const struct conn *c)
{
	if (conn_has_output(c))
		return POLLOUT;
	return c->closing ? 0 : POLLIN;
}

static void *control_main(void *arg)
{
	struct fg_control *ctl = arg;
	enum { WAKE, LISTEN, RELOAD, FIXED };
	rcu_register_thread();
	rcu_thread_offline();
	fg_logwatch_init(&ctl->watch, &ctl->view, fg_now_ns());
	for (;;) {
		struct pollfd pfd[FG_CONTROL_MAX_CLIENTS + FIXED];
		struct conn *owner[FG_CONTROL_MAX_CLIENTS + FIXED];
		unsigned n = FIXED;
		pfd[WAKE] = (struct pollfd){ ctl->wake[0], POLLIN, 0 };
		pfd[LISTEN] = (struct pollfd){ ctl->listen_fd, POLLIN, 0 };
		pfd[RELOAD] = (struct pollfd){ ctl->view.reload_fd, POLLIN, 0 }; /* a negative fd is skipped */
		for (unsigned i = 0; i < FG_CONTROL_MAX_CLIENTS; i++)
			if (ctl->conns[i].fd >= 0) {
				pfd[n] = (struct pollfd){ ctl->conns[i].fd, conn_events(&ctl->conns[i]), 0 };
				owner[n++] = &ctl->conns[i];
			}
		bool answer_load = ctl->view.settings->answer_load != FG_ANSWER_LOAD_OFF;
		poll(pfd, n, (answer_load ? FG_LOAD_PUBLISH_PERIOD_NS : FG_LOGWATCH_PERIOD_NS) / FG_NS_PER_MS);
		if (pfd[WAKE].revents) {
			fg_logwatch_flush(&ctl->watch, &ctl->view, fg_now_ns()); /* the workers are done by now */
			break;
		}
		uint64_t now = fg_now_ns();
		if (fg_logwatch_poll(&ctl->watch, &ctl->view, now))
			sd_notify(0, "STOPPING=1");
		if (answer_load && now >= ctl->load_due_ns) {
			fg_load_publish(ctl->view.worker_stats, ctl->view.n_workers, ctl->view.settings->seat_limit);
			ctl->load_due_ns = now + FG_LOAD_PUBLISH_PERIOD_NS;
		}
		if (pfd[RELOAD].revents & POLLIN) {
			uint64_t count;
			ssize_t r = read(ctl->view.reload_fd, &count, sizeof(count)); /* several SIGHUPs: one reload */
			(void)r;
			reload(ctl);
		}
		/* Bounded, so that a flood of connects cannot starve the others. */
		for (unsigned k = 0; k < 2 * FG_CONTROL_MAX_CLIENTS && (pfd[LISTEN].revents & POLLIN); k++) {
			int fd = accept4(ctl->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (fd < 0)
				break;
			accept_one(ctl, fd, now);
		}
		for (unsigned i = FIXED; i < n; i++) {
			struct conn *c = owner[i];
			/* Closed since poll, or its slot given to an admin: a new
			 * descriptor may even have the old number — then the events
			 * are only a spurious wake-up (the socket is non-blocking). */
			if (!pfd[i].revents || c->fd != pfd[i].fd)
				continue;
			if (conn_has_output(c)) {
				conn_flush(ctl, c, now);
				if (c->fd >= 0)
					conn_serve(ctl, c, now); /* the lines that waited for this answer */
			} else if (!c->closing) {
				conn_read(ctl, c, now);
			} else {
				conn_close(ctl, c); /* hung up while closing */
			}
		}
		for (unsigned i = 0; i < FG_CONTROL_MAX_CLIENTS; i++)
			if (ctl->conns[i].fd >= 0)
				conn_check_timeouts(ctl, &ctl->conns[i], now);
	}
	rcu_thread_online();
	rcu_unregister_thread();
	return NULL;
}

/* --- the socket path ------------------------------------------------------------- */

/* Take the path: free, or a stale socket (nobody accepts on it), which is
 * removed.  A live socket and any other kind of file are left alone. */
static int claim_path(const char *path, char *errbuf, size_t errlen)
{
	struct stat st;
	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(errbuf, errlen, "control socket %s: %s", path, strerror(errno));
		return -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(errbuf, errlen, "control socket %s: the path exists and is not a socket; not removing it",
			 path);
		return -EEXIST;
	}
	/* Non-blocking: a live daemon with a full backlog answers EAGAIN, not a hang. */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	int rc = fd < 0 ? -errno : connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : -errno;
	if (fd >= 0)
		close(fd);
	if (rc == -ECONNREFUSED) {
		if (unlink(path) == 0 || errno == ENOENT)
			return 0;
		rc = -errno;
		snprintf(errbuf, errlen, "control socket %s: cannot remove the stale socket: %s", path, strerror(-rc));
		return rc;
	}
	if (rc == 0 || rc == -EAGAIN || rc == -EINPROGRESS)
		snprintf(errbuf, errlen, "another fairgate is listening on %s", path);
	else
		snprintf(errbuf, errlen, "control socket %s: cannot tell whether it is stale (%s); not removing it",
			 path, strerror(-rc));
	return rc ? rc : -EADDRINUSE;
}

/* Remove the socket at stop only if it is still the one bound here. */
static void release_path(const struct fg_control *ctl)
{
	struct stat st;
	if (lstat(ctl->path, &st) == 0 && st.st_dev == ctl->sock_dev && st.st_ino == ctl->sock_ino)
		unlink(ctl->path);
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

int fg_control_socket_gid(const char *group, uint32_t *gid, char *errbuf, size_t errlen)
{
	*gid = (uint32_t)-1;
	if (!*group)
		return 0;
	char *end;
	errno = 0;
	unsigned long v = strtoul(group, &end, 10);
	if (!errno && !*end && v < (uint32_t)-1) {
		*gid = (uint32_t)v; /* a number is a gid, listed in /etc/group or not */
		return 0;
	}
	struct group gr, *found = NULL;
	char buf[4096];
	int rc = getgrnam_r(group, &gr, buf, sizeof(buf), &found);
	if (rc || !found) {
		snprintf(errbuf, errlen, "controlSocketGroup \"%s\": %s (give a group of /etc/group or a numeric gid)",
			 group, rc ? strerror(rc) : "no such group");
		return -ENOENT;
	}
	*gid = (uint32_t)found->gr_gid;
	return 0;
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
	/* The start-up generation is the first one a rollback can go back to. */
	ctl->view.history = fg_history_new();
	if (!ctl->view.history || fg_history_record(ctl->view.history, (*view->config_ptr)->generation, time(NULL), -1,
						    "start-up", ctl->view.objects, ctl->view.settings,
						    ctl->view.settings->config_history)) {
		snprintf(errbuf, errlen, "out of memory");
		fg_history_free(ctl->view.history);
		free(ctl);
		return NULL;
	}
	ctl->listen_fd = ctl->wake[0] = ctl->wake[1] = -1;
	for (unsigned i = 0; i < FG_CONTROL_MAX_CLIENTS; i++)
		ctl->conns[i].fd = -1;
	snprintf(ctl->path, sizeof(ctl->path), "%s", view->settings->control_socket);
	mkdir_parent(ctl->path);
	uint32_t gid;
	if (fg_control_socket_gid(view->settings->control_socket_group, &gid, errbuf, errlen) ||
	    claim_path(ctl->path, errbuf, errlen))
		goto err;
	ctl->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", ctl->path);
	if (ctl->listen_fd < 0 || bind(ctl->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		snprintf(errbuf, errlen, "control socket %s: %s", ctl->path, strerror(errno));
		goto err;
	}
	struct stat st;
	ctl->bound = lstat(ctl->path, &st) == 0;
	ctl->sock_dev = ctl->bound ? st.st_dev : 0;
	ctl->sock_ino = ctl->bound ? st.st_ino : 0;
	/* Group, then mode: who may connect is settled before anyone can (listen). */
	if (gid != (uint32_t)-1 && chown(ctl->path, (uid_t)-1, (gid_t)gid) < 0) {
		snprintf(errbuf, errlen, "control socket %s: cannot give it group %s: %s", ctl->path,
			 view->settings->control_socket_group, strerror(errno));
		goto err;
	}
	if (chmod(ctl->path, view->settings->control_socket_mode) < 0 || listen(ctl->listen_fd, 16) < 0) {
		snprintf(errbuf, errlen, "control socket %s: %s", ctl->path, strerror(errno));
		goto err;
	}
	if (pipe2(ctl->wake, O_CLOEXEC) < 0 || pthread_create(&ctl->thread, NULL, control_main, ctl)) {
		snprintf(errbuf, errlen, "cannot start the control thread: %s", strerror(errno));
		goto err;
	}
	return ctl;
err:
	fg_history_free(ctl->view.history);
	if (ctl->bound)
		release_path(ctl);
	if (ctl->listen_fd >= 0)
		close(ctl->listen_fd);
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
			conn_close(ctl, &ctl->conns[i]);
	}
	close(ctl->listen_fd);
	release_path(ctl);
	close(ctl->wake[0]);
	close(ctl->wake[1]);
	fg_fc_set_free(ctl->view.objects); /* the control thread owned the object set */
	fg_history_free(ctl->view.history);
	free(ctl->view.settings);          /* and its copy of the settings */
	free(ctl);
}
