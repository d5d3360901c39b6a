/* SPDX-License-Identifier: Apache-2.0 */
/* httpguard — deadlines, eviction and the parameter cap of the HTTP endpoint; see httpguard.h. */
#include "httpguard.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"

#define GUARD_SLOTS (FG_HTTP_MAX_CONNECTIONS + FG_HTTP_SPARE_CONNECTIONS)

struct guard_slot {
	bool used, shut;
	bool answering;    /* the handler has it: its request was read whole */
	int fd;
	uint64_t since_ns; /* accept, or the end of the previous request */
	uint8_t source[16]; /* the client's address (IPv4 in the first 4 bytes) */
};

struct fg_httpguard {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t sweeper;
	bool stopping;
	struct guard_slot slots[GUARD_SLOTS];
	_Atomic uint64_t deadline_cut, evicted, too_many_params;
};

/* Under the lock: end the slot's connection (libmicrohttpd closes it). */
static void shut(struct guard_slot *s)
{
	if (!s->shut) {
		shutdown(s->fd, SHUT_RDWR);
		s->shut = true;
	}
}

static void sweep(struct fg_httpguard *g, uint64_t now)
{
	for (unsigned i = 0; i < GUARD_SLOTS; i++) {
		struct guard_slot *s = &g->slots[i];
		if (s->used && !s->shut && now - s->since_ns > FG_HTTP_REQUEST_DEADLINE_NS) {
			shut(s);
			atomic_fetch_add_explicit(&g->deadline_cut, 1, memory_order_relaxed);
		}
	}
}

static void *sweeper_main(void *arg)
{
	struct fg_httpguard *g = arg;
	pthread_mutex_lock(&g->lock);
	while (!g->stopping) {
		struct timespec until; /* the condition variable waits on the monotonic clock */
		clock_gettime(CLOCK_MONOTONIC, &until);
		uint64_t ns = (uint64_t)until.tv_nsec + FG_HTTP_SWEEP_NS;
		until.tv_sec += (time_t)(ns / 1000000000ull);
		until.tv_nsec = (long)(ns % 1000000000ull);
		pthread_cond_timedwait(&g->wake, &g->lock, &until);
		sweep(g, fg_now_ns());
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

struct fg_httpguard *fg_httpguard_create(char *err, size_t errlen)
{
	struct fg_httpguard *g = calloc(1, sizeof(*g));
	if (!g) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_t attr; /* a clock stepped back must not stop the sweeps */
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&g->wake, &attr);
	pthread_condattr_destroy(&attr);
	int rc = pthread_create(&g->sweeper, NULL, sweeper_main, g);
	if (rc) {
		snprintf(err, errlen, "cannot start the HTTP sweeper thread: %s", strerror(rc));
		pthread_cond_destroy(&g->wake);
		pthread_mutex_destroy(&g->lock);
		free(g);
		return NULL;
	}
	return g;
}

void fg_httpguard_free(struct fg_httpguard *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stopping = true;
	pthread_cond_signal(&g->wake);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->sweeper, NULL);
	pthread_cond_destroy(&g->wake);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

void fg_httpguard_stats(const struct fg_httpguard *g, struct fg_httpguard_stats *out)
{
	out->deadline_cut = atomic_load_explicit(&g->deadline_cut, memory_order_relaxed);
	out->evicted = atomic_load_explicit(&g->evicted, memory_order_relaxed);
	out->too_many_params = atomic_load_explicit(&g->too_many_params, memory_order_relaxed);
}

/* The client's address as a slot keeps it. */
static void source_of(struct MHD_Connection *c, uint8_t out[16])
{
	memset(out, 0, 16);
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = i ? i->client_addr : NULL;
	if (sa && sa->sa_family == AF_INET)
		memcpy(out, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	else if (sa && sa->sa_family == AF_INET6)
		memcpy(out, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
}

/* Under the lock: the connection (of `source` when not NULL) whose request
 * began longest ago, one still sending its request before one being
 * answered; NULL if none is left. */
static struct guard_slot *oldest(struct fg_httpguard *g, const struct guard_slot *except, const uint8_t *source)
{
	struct guard_slot *best = NULL;
	for (unsigned i = 0; i < GUARD_SLOTS; i++) {
		struct guard_slot *s = &g->slots[i];
		if (!s->used || s->shut || s == except || (source && memcmp(s->source, source, 16)))
			continue;
		if (!best || (best->answering && !s->answering) ||
		    (best->answering == s->answering && s->since_ns < best->since_ns))
			best = s;
	}
	return best;
}

void fg_httpguard_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
				enum MHD_ConnectionNotificationCode toe)
{
	struct fg_httpguard *g = cls;
	pthread_mutex_lock(&g->lock);
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct guard_slot *s = NULL;
		for (unsigned i = 0; i < GUARD_SLOTS && !s; i++)
			if (!g->slots[i].used)
				s = &g->slots[i];
		/* libmicrohttpd's limit is the table's size: a free slot is there. */
		if (s && fd) {
			*s = (struct guard_slot){ .used = true, .fd = fd->connect_fd, .since_ns = fg_now_ns() };
			source_of(c, s->source);
			*socket_context = s;
			/* One more than a source may keep: its own oldest goes; one more
			 * than the endpoint keeps: the oldest of all goes.  The new
			 * connection always stays. */
			unsigned same = 0, open = 0;
			for (unsigned i = 0; i < GUARD_SLOTS; i++) {
				const struct guard_slot *o = &g->slots[i];
				open += o->used && !o->shut;
				same += o->used && !o->shut && !memcmp(o->source, s->source, 16);
			}
			struct guard_slot *victim = same > FG_HTTP_MAX_PER_SOURCE ? oldest(g, s, s->source)
						    : open > FG_HTTP_MAX_CONNECTIONS ? oldest(g, s, NULL) : NULL;
			if (victim) {
				shut(victim);
				atomic_fetch_add_explicit(&g->evicted, 1, memory_order_relaxed);
			}
		}
	} else if (*socket_context) {
		struct guard_slot *s = *socket_context;
		s->used = false;
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&g->lock);
}

static struct guard_slot *slot_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return i ? i->socket_context : NULL;
}

void fg_httpguard_on_completed(void *cls, struct MHD_Connection *c, void **req, enum MHD_RequestTerminationCode toe)
{
	struct fg_httpguard *g = cls;
	(void)req;
	(void)toe;
	struct guard_slot *s = slot_of(c);
	if (!s)
		return;
	pthread_mutex_lock(&g->lock);
	if (s->used) { /* the next request on this connection starts its own deadline */
		s->since_ns = fg_now_ns();
		s->answering = false;
	}
	pthread_mutex_unlock(&g->lock);
}

void fg_httpguard_answering(struct fg_httpguard *g, struct MHD_Connection *c)
{
	struct guard_slot *s = slot_of(c);
	if (!s)
		return;
	pthread_mutex_lock(&g->lock);
	if (s->used)
		s->answering = true;
	pthread_mutex_unlock(&g->lock);
}

/* Before libmicrohttpd splits the query: too many parameters are answered
 * here, on the socket, and the connection shut (nothing has been sent on it
 * for this request, and the previous answer went out whole before this
 * request line was read). */
void *fg_httpguard_on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct fg_httpguard *g = cls;
	const char *q = strchr(uri, '?');
	unsigned params = 0;
	for (; q && *q; q++)
		params += *q == '?' || *q == '&' || *q == ';';
	if (params <= FG_HTTP_MAX_QUERY_PARAMS)
		return NULL;
	struct guard_slot *s = slot_of(c);
	if (!s)
		return NULL;
	char answer[256];
	char body[96];
	int blen = snprintf(body, sizeof(body), "bad request: more than %u query parameters\n", FG_HTTP_MAX_QUERY_PARAMS);
	int len = snprintf(answer, sizeof(answer),
			   "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
			   "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
			   blen, body);
	pthread_mutex_lock(&g->lock);
	if (s->used && !s->shut) {
		/* A short answer into an empty socket buffer: it does not block,
		 * and a client that does not read loses only its own answer. */
		(void)!send(s->fd, answer, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
		shut(s);
		atomic_fetch_add_explicit(&g->too_many_params, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}
