/* SPDX-License-Identifier: Apache-2.0 */
/* http_debug — dump_* and pendingrequests over HTTP; see http_debug.h. */
#include "http_debug.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "defs.h"

#define PENDING_SUFFIX "/pendingrequests"
#define DETAILS_VALUE_MAX 16u /* bytes of includeRequestDetails' value */

static const char *const dumps[] = {
	[FG_VIS_DUMP_LEVELS] = FG_HTTP_DEBUG_PREFIX "dump_priority_levels",
	[FG_VIS_DUMP_QUEUES] = FG_HTTP_DEBUG_PREFIX "dump_queues",
	[FG_VIS_DUMP_REQUESTS] = FG_HTTP_DEBUG_PREFIX "dump_requests",
};

/* The level named by a pendingrequests path, copied into name; false when
 * url is not one (or the name is empty, too long or holds a '/'). */
static bool pending_level(const char *url, char name[FG_LEVEL_NAME_MAX])
{
	size_t pre = strlen(FG_HTTP_VISIBILITY_PREFIX), suf = strlen(PENDING_SUFFIX), n = strlen(url);
	if (n <= pre + suf || strncmp(url, FG_HTTP_VISIBILITY_PREFIX, pre) || strcmp(url + n - suf, PENDING_SUFFIX))
		return false;
	size_t len = n - pre - suf;
	if (len >= FG_LEVEL_NAME_MAX || memchr(url + pre, '/', len))
		return false;
	memcpy(name, url + pre, len);
	name[len] = 0;
	return true;
}

bool fg_http_debug_route(const char *url)
{
	return !strncmp(url, FG_HTTP_DEBUG_PREFIX, strlen(FG_HTTP_DEBUG_PREFIX)) ||
	       !strncmp(url, FG_HTTP_VISIBILITY_PREFIX, strlen(FG_HTTP_VISIBILITY_PREFIX));
}

enum MHD_Result fg_http_respond(struct MHD_Connection *c, unsigned status, char *body, size_t len, const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_line(struct MHD_Connection *c, unsigned status, const char *line, bool json)
{
	struct fg_vis_answer a;
	fg_vis_error(&a, status, line, json);
	if (!a.body)
		return MHD_NO;
	return fg_http_respond(c, a.status, a.body, a.len, json ? "application/json" : "text/plain; charset=utf-8");
}

struct params {
	struct fg_kv kv[FG_PENDING_MAX_PARAMS + 1];
	size_t n;
};

static enum MHD_Result collect(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	struct params *p = cls;
	if (p->n == FG_PENDING_MAX_PARAMS + 1)
		return MHD_NO; /* one more than allowed is enough to refuse */
	p->kv[p->n++] = (struct fg_kv){ key, value };
	return MHD_YES;
}

/* A key cut short and printable, for an error line. */
static void printable_key(char *out, size_t cap, const char *key)
{
	size_t n = 0;
	for (const char *p = key ? key : ""; *p && n + 1 < cap; p++)
		out[n++] = *p >= 0x20 && *p < 0x7f ? *p : '?';
	out[n] = 0;
}

static enum MHD_Result serve_pending(struct fg_vis *vis, struct MHD_Connection *c, const char *level,
				     const struct params *p)
{
	struct fg_pending_query q;
	char err[160];
	if (fg_pending_parse_query(p->kv, p->n, &q, err, sizeof(err))) {
		char line[200];
		snprintf(line, sizeof(line), "bad request: %s", err); /* err is printable (pending.h) */
		return send_line(c, MHD_HTTP_BAD_REQUEST, line, true);
	}
	struct fg_vis_answer a;
	fg_vis_pending(vis, level, &q, &a);
	if (!a.body)
		return MHD_NO;
	return fg_http_respond(c, a.status, a.body, a.len, "application/json");
}

static enum MHD_Result serve_dump(struct fg_vis *vis, struct MHD_Connection *c, enum fg_vis_dump what,
				  const struct params *p)
{
	bool details = false;
	for (size_t i = 0; i < p->n; i++) {
		char k[49], line[128];
		printable_key(k, sizeof(k), p->kv[i].key);
		bool known = what == FG_VIS_DUMP_REQUESTS && p->kv[i].key && !strcmp(p->kv[i].key, "includeRequestDetails");
		if (!known || details || (p->kv[i].value && strlen(p->kv[i].value) > DETAILS_VALUE_MAX)) {
			snprintf(line, sizeof(line), "bad request: %s query parameter \"%s\"",
				 !known ? "unknown" : details ? "repeated" : "too long a value for the", k);
			return send_line(c, MHD_HTTP_BAD_REQUEST, line, false);
		}
		/* Kubernetes: any non-empty value asks for the details. */
		details = p->kv[i].value && *p->kv[i].value;
	}
	struct fg_vis_answer a;
	fg_vis_dump(vis, what, details, false, &a);
	if (!a.body)
		return MHD_NO;
	return fg_http_respond(c, a.status, a.body, a.len, "text/plain; charset=utf-8");
}

enum MHD_Result fg_http_debug_serve(struct fg_vis *vis, struct MHD_Connection *c, const char *url)
{
	struct params p = { .n = 0 };
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect, &p);
	char level[FG_LEVEL_NAME_MAX];
	if (pending_level(url, level))
		return serve_pending(vis, c, level, &p);
	for (size_t i = 0; i < sizeof(dumps) / sizeof(dumps[0]); i++)
		if (!strcmp(url, dumps[i])) {
			if (p.n > FG_PENDING_MAX_PARAMS)
				return send_line(c, MHD_HTTP_BAD_REQUEST, "bad request: too many query parameters", false);
			return serve_dump(vis, c, (enum fg_vis_dump)i, &p);
		}
	bool visibility = !strncmp(url, FG_HTTP_VISIBILITY_PREFIX, strlen(FG_HTTP_VISIBILITY_PREFIX));
	return send_line(c, MHD_HTTP_NOT_FOUND,
			 visibility ? "not found: the path is " FG_HTTP_VISIBILITY_PREFIX "NAME" PENDING_SUFFIX
					    " (NAME at most 63 bytes, no '/')"
				    : "not found: the paths are " FG_HTTP_DEBUG_PREFIX
				      "dump_priority_levels, dump_queues and dump_requests",
			 visibility);
}
