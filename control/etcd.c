/* SPDX-License-Identifier: Apache-2.0 */
/* etcd — v3 calls over the JSON gateway; see etcd.h. */
#include "etcd.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "defs.h"
#include "endpoint.h"
#include "reason.h"

struct fg_etcd {
	CURL *curl;
	char urls[FG_CLUSTER_MAX_ENDPOINTS][FG_URL_MAX];
	/* With a server name: the URL asked for (its host the name) and where
	 * curl connects instead (CURLOPT_CONNECT_TO "NAME:PORT:HOST:PORT"). */
	char asked[FG_CLUSTER_MAX_ENDPOINTS][FG_URL_MAX + FG_CLUSTER_USER_MAX];
	struct curl_slist *connect_to[FG_CLUSTER_MAX_ENDPOINTS];
	bool https;
	char ca[FG_CLUSTER_PATH_MAX], cert[FG_CLUSTER_PATH_MAX], key[FG_CLUSTER_PATH_MAX];
	char user[FG_CLUSTER_USER_MAX], password[FG_CLUSTER_PASSWORD_MAX];
	char token[1024];     /* etcd's auth token ("": none yet) */
	unsigned n_urls, current;
	long timeout_ms;
	uint64_t deadline_ns;  /* calls give up here (0: no limit) */
	char *body;           /* the answer being read */
	size_t len, cap;
	bool too_big;
	long status;          /* the last answer's HTTP status */
	char detail[CURL_ERROR_SIZE]; /* curl's own words for the last failure (TLS says more there) */
	char error[512];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Copy an option that must fit. */
static int copy_opt(char *dst, size_t cap, const char *src, const char *what, char *why, size_t whylen)
{
	if (src && strlen(src) >= cap)
		return fg_reason(-EINVAL, why, whylen, "%s: at most %zu bytes", what, cap - 1);
	snprintf(dst, cap, "%s", src ? src : "");
	return 0;
}

/* With a server name, each endpoint is asked for under that name and
 * reached at its own host. */
static int set_server_name(struct fg_etcd *e, const char *name, char *why, size_t whylen)
{
	for (unsigned i = 0; i < e->n_urls; i++) {
		const char *host = strstr(e->urls[i], "://") + 3, *port = strrchr(host, ':');
		if (!name || !*name) {
			memcpy(e->asked[i], e->urls[i], sizeof(e->urls[i]));
			continue;
		}
		snprintf(e->asked[i], sizeof(e->asked[i]), "https://%s%s", name, port);
		char rule[FG_URL_MAX + FG_CLUSTER_USER_MAX + 8];
		snprintf(rule, sizeof(rule), "%s%s:%.*s%s", name, port, (int)(port - host), host, port);
		if (!(e->connect_to[i] = curl_slist_append(NULL, rule)))
			return fg_reason(-ENOMEM, why, whylen, "out of memory");
	}
	return 0;
}

struct fg_etcd *fg_etcd_new(const char *urls, long timeout_ms, const struct fg_etcd_opts *opts, char *why,
			    size_t whylen)
{
	static const struct fg_etcd_opts none;
	struct fg_etcd *e = calloc(1, sizeof(*e));
	if (!e) {
		fg_reason(-ENOMEM, why, whylen, "out of memory");
		return NULL;
	}
	if (!opts)
		opts = &none;
	int n = fg_urls_parse(urls, FG_CLUSTER_MAX_ENDPOINTS, e->urls, why, whylen);
	if (n <= 0) {
		if (n == 0)
			fg_reason(-EINVAL, why, whylen, "no etcd endpoint");
		free(e);
		return NULL;
	}
	e->n_urls = (unsigned)n;
	e->https = !strncmp(e->urls[0], "https://", 8);
	if (copy_opt(e->ca, sizeof(e->ca), opts->ca, "the CA file's path", why, whylen) ||
	    copy_opt(e->cert, sizeof(e->cert), opts->cert, "the certificate's path", why, whylen) ||
	    copy_opt(e->key, sizeof(e->key), opts->key, "the key's path", why, whylen) ||
	    copy_opt(e->user, sizeof(e->user), opts->user, "the user", why, whylen) ||
	    copy_opt(e->password, sizeof(e->password), opts->password, "the password", why, whylen) ||
	    set_server_name(e, opts->server_name, why, whylen)) {
		fg_etcd_free(e);
		return NULL;
	}
	e->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
	pthread_once(&curl_once, curl_init_once);
	if (sodium_init() < 0 || !(e->curl = curl_easy_init())) {
		fg_reason(-ENOMEM, why, whylen, "cannot start an HTTP client");
		fg_etcd_free(e);
		return NULL;
	}
	return e;
}

void fg_etcd_free(struct fg_etcd *e)
{
	if (!e)
		return;
	if (e->curl)
		curl_easy_cleanup(e->curl);
	for (unsigned i = 0; i < FG_CLUSTER_MAX_ENDPOINTS; i++)
		curl_slist_free_all(e->connect_to[i]);
	sodium_memzero(e->password, sizeof(e->password));
	sodium_memzero(e->token, sizeof(e->token));
	free(e->body);
	free(e);
}

void fg_etcd_set_deadline(struct fg_etcd *e, uint64_t deadline_ns)
{
	e->deadline_ns = deadline_ns;
}

const char *fg_etcd_errmsg(const struct fg_etcd *e)
{
	return e->error;
}

const char *fg_etcd_endpoint(const struct fg_etcd *e)
{
	return e->urls[e->current];
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct fg_etcd *e = arg;
	size_t n = size * nmemb;
	if (e->len + n + 1 > FG_ETCD_MAX_BODY) {
		e->too_big = true;
		return 0; /* aborts the transfer */
	}
	if (e->len + n + 1 > e->cap) {
		size_t cap = e->cap ? e->cap : 4096;
		while (cap < e->len + n + 1)
			cap *= 2;
		char *b = realloc(e->body, cap);
		if (!b)
			return 0;
		e->body = b;
		e->cap = cap;
	}
	memcpy(e->body + e->len, data, n);
	e->len += n;
	e->body[e->len] = 0;
	return n;
}

/* POST json to path at the current endpoint, then the others in turn.  On
 * 0, e->body/e->len hold the answer (HTTP 200, or an etcd error object with
 * a 4xx status). */
static int post(struct fg_etcd *e, const char *path, const char *json, bool with_token)
{
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	if (with_token && e->token[0]) {
		char auth[sizeof(e->token) + 32];
		snprintf(auth, sizeof(auth), "Authorization: %s", e->token);
		struct curl_slist *more = curl_slist_append(hdr, auth);
		sodium_memzero(auth, sizeof(auth));
		if (more)
			hdr = more;
	}
	int rc = -EIO;
	for (unsigned tries = 0; tries < e->n_urls; tries++) {
		long timeout_ms = e->timeout_ms;
		if (e->deadline_ns) {
			uint64_t now = fg_now_ns();
			if (now >= e->deadline_ns) {
				snprintf(e->error, sizeof(e->error), "no time left before the lease deadline");
				break;
			}
			uint64_t left_ms = (e->deadline_ns - now + FG_NS_PER_MS - 1) / FG_NS_PER_MS;
			if (left_ms < (uint64_t)timeout_ms)
				timeout_ms = (long)left_ms;
		}
		char url[sizeof(e->asked[0]) + 64];
		snprintf(url, sizeof(url), "%s%s", e->asked[e->current], path);
		e->len = 0;
		e->too_big = false;
		curl_easy_reset(e->curl);
		curl_easy_setopt(e->curl, CURLOPT_URL, url);
		curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, json);
		curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, e);
		curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
		curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
		curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);        /* a thread: no SIGALRM for timeouts */
		curl_easy_setopt(e->curl, CURLOPT_PROTOCOLS_STR, e->https ? "https" : "http"); /* no redirect elsewhere */
		curl_easy_setopt(e->curl, CURLOPT_FOLLOWLOCATION, 0L);
		e->detail[0] = 0;
		curl_easy_setopt(e->curl, CURLOPT_ERRORBUFFER, e->detail);
		if (e->https) { /* verification is curl's default; said here so that no change can drop it */
			curl_easy_setopt(e->curl, CURLOPT_SSL_VERIFYPEER, 1L);
			curl_easy_setopt(e->curl, CURLOPT_SSL_VERIFYHOST, 2L);
			if (e->ca[0])
				curl_easy_setopt(e->curl, CURLOPT_CAINFO, e->ca);
			if (e->cert[0]) {
				curl_easy_setopt(e->curl, CURLOPT_SSLCERT, e->cert);
				curl_easy_setopt(e->curl, CURLOPT_SSLKEY, e->key);
			}
			if (e->connect_to[e->current])
				curl_easy_setopt(e->curl, CURLOPT_CONNECT_TO, e->connect_to[e->current]);
		}
		CURLcode cc = curl_easy_perform(e->curl);
		long status = 0;
		curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
		e->status = status;
		if (cc == CURLE_OK && status >= 200 && status < 500) {
			e->error[0] = 0;
			rc = 0;
			break;
		}
		if (e->too_big)
			snprintf(e->error, sizeof(e->error), "%s: an answer over %u bytes", url, FG_ETCD_MAX_BODY);
		else if (cc != CURLE_OK) {
			/* A TLS server that wants a client certificate ends the
			 * handshake in ways curl words differently each time. */
			bool no_cert = e->https && !e->cert[0] &&
				       (cc == CURLE_RECV_ERROR || cc == CURLE_SEND_ERROR || cc == CURLE_SSL_CONNECT_ERROR ||
					cc == CURLE_GOT_NOTHING);
			snprintf(e->error, sizeof(e->error), "%s: %s%s%s%s", url, curl_easy_strerror(cc),
				 e->detail[0] ? " (" : "", e->detail, e->detail[0] ? ")" : "");
			if (no_cert) {
				size_t n = strlen(e->error);
				snprintf(e->error + n, sizeof(e->error) - n, "; does etcd want a client certificate "
					 "(clusterEtcdCert, clusterEtcdKey)?");
			}
		}
		else
			snprintf(e->error, sizeof(e->error), "%s: HTTP %ld", url, status);
		e->current = (e->current + 1) % e->n_urls;
	}
	for (struct curl_slist *h = hdr; h; h = h->next) /* the token */
		sodium_memzero(h->data, strlen(h->data));
	curl_slist_free_all(hdr);
	return rc;
}

/* An etcd 64-bit number: a JSON string of digits (the gateway's), or a
 * JSON integer; absent: 0. */
static int get_i64(json_t *obj, const char *name, int64_t *out)
{
	json_t *v = json_object_get(obj, name);
	*out = 0;
	if (!v)
		return 0;
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v))
		return -EPROTO;
	const char *s = json_string_value(v);
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -EPROTO;
	*out = x;
	return 0;
}

/* The answer as a JSON object; an etcd error object is -ENOENT for
 * "not found" (gRPC code 5), else -EPROTO with its message. */
static int parse_answer(const char *body, size_t len, json_t **out, char *why, size_t whylen)
{
	json_error_t jerr;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	*out = NULL;
	if (!root || !json_is_object(root)) {
		json_decref(root);
		return fg_reason(-EPROTO, why, whylen, "etcd's answer is not a JSON object");
	}
	json_t *err = json_object_get(root, "error");
	if (err) {
		int64_t code = 0;
		get_i64(root, "code", &code);
		const char *msg = json_is_string(err) ? json_string_value(err) : "?";
		int rc = fg_reason(code == 5 ? -ENOENT : -EPROTO, why, whylen, "etcd: %.200s", msg);
		json_decref(root);
		return rc;
	}
	*out = root;
	return 0;
}

static int header_revision(json_t *root, int64_t *rev, char *why, size_t whylen)
{
	json_t *h = json_object_get(root, "header");
	if (!json_is_object(h) || get_i64(h, "revision", rev) || *rev < 0)
		return fg_reason(-EPROTO, why, whylen, "etcd's answer has no valid header.revision");
	return 0;
}

/* Base64 text of a JSON string into dst (cap bytes with the terminator). */
static int b64_decode(json_t *v, char *dst, size_t cap, size_t *len)
{
	if (!json_is_string(v))
		return -EPROTO;
	const char *s = json_string_value(v);
	size_t n = json_string_length(v), out = 0;
	if (sodium_base642bin((unsigned char *)dst, cap - 1, s, n, NULL, &out, NULL, sodium_base64_VARIANT_ORIGINAL))
		return -EPROTO;
	dst[out] = 0;
	if (len)
		*len = out;
	return 0;
}

void fg_etcd_range_free(struct fg_etcd_range *r)
{
	for (size_t i = 0; r->kvs && i < r->n; i++)
		free(r->kvs[i].value);
	free(r->kvs);
	memset(r, 0, sizeof(*r));
}

int fg_etcd_parse_range(const char *body, size_t len, struct fg_etcd_range *out, char *why, size_t whylen)
{
	json_t *root;
	memset(out, 0, sizeof(*out));
	int rc = parse_answer(body, len, &root, why, whylen);
	if (rc)
		return rc;
	rc = header_revision(root, &out->revision, why, whylen);
	json_t *kvs = json_object_get(root, "kvs");
	if (!rc && kvs && !json_is_array(kvs))
		rc = fg_reason(-EPROTO, why, whylen, "etcd's kvs is not a list");
	size_t n = kvs ? json_array_size(kvs) : 0;
	if (!rc && n > FG_ETCD_MAX_KVS)
		rc = fg_reason(-EPROTO, why, whylen, "etcd returned %zu keys (at most %u are read)", n, FG_ETCD_MAX_KVS);
	if (!rc && n && !(out->kvs = calloc(n, sizeof(*out->kvs))))
		rc = fg_reason(-ENOMEM, why, whylen, "out of memory");
	json_t *more = json_object_get(root, "more");
	if (!rc && more && json_is_true(more))
		rc = fg_reason(-EPROTO, why, whylen, "more than %u keys under the prefix (at most %u are read)",
			       FG_ETCD_MAX_KVS, FG_ETCD_MAX_KVS);
	for (size_t i = 0; !rc && i < n; i++) {
		json_t *kv = json_array_get(kvs, i);
		struct fg_etcd_kv *o = &out->kvs[i];
		out->n = i + 1;
		size_t klen = 0;
		json_t *v = json_is_object(kv) ? json_object_get(kv, "value") : NULL;
		/* A value's room from its base64 length, at most FG_ETCD_VALUE_MAX. */
		size_t cap = json_is_string(v) ? json_string_length(v) / 4 * 3 + 4 : 1;
		if (cap > FG_ETCD_VALUE_MAX)
			cap = FG_ETCD_VALUE_MAX;
		if (!(o->value = malloc(cap))) {
			rc = fg_reason(-ENOMEM, why, whylen, "out of memory");
			break;
		}
		o->value[0] = 0;
		/* One bad key or value is that entry's problem, not the read's:
		 * the entry is marked and the caller decides what it means. */
		if (!json_is_object(kv) || b64_decode(json_object_get(kv, "key"), o->key, sizeof(o->key), &klen) ||
		    strlen(o->key) != klen)
			o->bad = true, o->key[0] = 0;
		else if (v && b64_decode(v, o->value, cap, &o->value_len))
			o->bad = true, o->value[0] = 0, o->value_len = 0;
		if (json_is_object(kv) && (get_i64(kv, "mod_revision", &o->mod_revision) || get_i64(kv, "lease", &o->lease)))
			o->bad = true;
	}
	json_decref(root);
	return rc;
}

int fg_etcd_parse_lease(const char *body, size_t len, int64_t *id, int64_t *ttl_s, char *why, size_t whylen)
{
	json_t *root;
	int rc = parse_answer(body, len, &root, why, whylen);
	if (rc)
		return rc;
	/* Keep-alive answers wrap the lease in "result"; grant answers do not. */
	json_t *r = json_object_get(root, "result");
	if (!r)
		r = root;
	if (!json_is_object(r) || get_i64(r, "ID", id) || get_i64(r, "TTL", ttl_s) || *ttl_s < 0)
		rc = fg_reason(-EPROTO, why, whylen, "etcd's lease answer has no valid ID and TTL");
	else if (*ttl_s == 0)
		rc = fg_reason(-ENOENT, why, whylen, "the lease expired");
	json_decref(root);
	return rc;
}

int fg_etcd_parse_txn(const char *body, size_t len, bool *succeeded, char *why, size_t whylen)
{
	json_t *root;
	int64_t rev;
	int rc = parse_answer(body, len, &root, why, whylen);
	if (rc)
		return rc;
	rc = header_revision(root, &rev, why, whylen);
	json_t *s = json_object_get(root, "succeeded"); /* the gateway leaves out false */
	if (!rc && s && !json_is_boolean(s))
		rc = fg_reason(-EPROTO, why, whylen, "etcd's succeeded is not a boolean");
	*succeeded = s && json_is_true(s);
	json_decref(root);
	return rc;
}

/* A JSON string of base64(text[0..len)). */
static json_t *b64_json(const char *text, size_t len)
{
	size_t cap = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
	char *buf = malloc(cap);
	if (!buf)
		return NULL;
	sodium_bin2base64(buf, cap, (const unsigned char *)text, len, sodium_base64_VARIANT_ORIGINAL);
	json_t *j = json_string(buf);
	free(buf);
	return j;
}

static json_t *i64_json(int64_t v)
{
	char s[24];
	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_string(s);
}

/* A user and password for a token (etcd's /v3/auth/authenticate). */
static int authenticate(struct fg_etcd *e)
{
	json_t *req = json_pack("{s:s, s:s}", "name", e->user, "password", e->password);
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req); /* the text is wiped below; jansson's own copy is freed unwiped */
	if (!text)
		return fg_reason(-ENOMEM, e->error, sizeof(e->error), "out of memory");
	int rc = post(e, "/v3/auth/authenticate", text, false);
	sodium_memzero(text, strlen(text));
	free(text);
	if (rc)
		return rc;
	json_t *root;
	char why[200];
	rc = parse_answer(e->body, e->len, &root, why, sizeof(why));
	if (rc)
		return fg_reason(-EACCES, e->error, sizeof(e->error), "etcd refused user %s: %s", e->user, why);
	json_t *token = json_object_get(root, "token");
	if (!json_is_string(token) || !json_string_length(token) || json_string_length(token) >= sizeof(e->token)) {
		json_decref(root);
		return fg_reason(-EPROTO, e->error, sizeof(e->error), "etcd's authenticate answer has no usable token");
	}
	snprintf(e->token, sizeof(e->token), "%s", json_string_value(token));
	json_decref(root);
	sodium_memzero(e->body, e->len); /* the token */
	return 0;
}

/* Whether the answer is etcd's "the token is not (or no longer) valid":
 * gRPC Unauthenticated (16: an expired simple token, a restarted etcd), or
 * "revision of auth store is old" (3: users or roles changed since the
 * token was issued; a JWT carries that revision until it expires).  etcd's
 * own client authenticates again on both.  Only an error answer is read. */
static bool token_refused(const struct fg_etcd *e)
{
	if (e->status < 400)
		return false;
	json_t *root = json_loadb(e->body, e->len, 0, NULL);
	json_t *code = json_object_get(root, "code"), *err = json_object_get(root, "error");
	int64_t c = json_is_integer(code) ? json_integer_value(code) : -1;
	bool refused = err && (c == 16 || (c == 3 && json_is_string(err) &&
					   strstr(json_string_value(err), "auth store is old")));
	json_decref(root);
	return refused;
}

/* Send a request object (consumed) and parse the answer with the parser's
 * shape; the error text goes to e->error.  With a user: a token first, and
 * a new one once if etcd no longer takes it. */
static int call(struct fg_etcd *e, const char *path, json_t *req)
{
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!text)
		return fg_reason(-ENOMEM, e->error, sizeof(e->error), "out of memory");
	int rc = 0;
	if (e->user[0] && !e->token[0])
		rc = authenticate(e);
	if (!rc)
		rc = post(e, path, text, true);
	if (!rc && e->user[0] && token_refused(e)) {
		e->token[0] = 0;
		rc = authenticate(e);
		if (!rc)
			rc = post(e, path, text, true);
	}
	free(text);
	return rc;
}

int fg_etcd_lease_grant(struct fg_etcd *e, int64_t ttl_s, int64_t *id, int64_t *granted_ttl_s)
{
	int rc = call(e, "/v3/lease/grant", json_pack("{s:o}", "TTL", i64_json(ttl_s)));
	return rc ? rc : fg_etcd_parse_lease(e->body, e->len, id, granted_ttl_s, e->error, sizeof(e->error));
}

int fg_etcd_lease_keepalive(struct fg_etcd *e, int64_t id, int64_t *ttl_s)
{
	int64_t got = 0;
	*ttl_s = 0;
	int rc = call(e, "/v3/lease/keepalive", json_pack("{s:o}", "ID", i64_json(id)));
	if (!rc)
		rc = fg_etcd_parse_lease(e->body, e->len, &got, ttl_s, e->error, sizeof(e->error));
	if (!rc && got != id)
		rc = fg_reason(-EPROTO, e->error, sizeof(e->error), "etcd kept another lease alive");
	return rc;
}

int fg_etcd_lease_revoke(struct fg_etcd *e, int64_t id)
{
	int rc = call(e, "/v3/lease/revoke", json_pack("{s:o}", "ID", i64_json(id)));
	json_t *root = NULL;
	if (!rc)
		rc = parse_answer(e->body, e->len, &root, e->error, sizeof(e->error));
	json_decref(root);
	return rc;
}

/* The end of the range of keys that start with prefix: its last byte + 1. */
static json_t *prefix_end(const char *prefix)
{
	char end[FG_ETCD_KEY_MAX];
	size_t n = strlen(prefix);
	if (!n || n >= sizeof(end))
		return NULL;
	memcpy(end, prefix, n);
	end[n - 1]++;
	return b64_json(end, n);
}

int fg_etcd_range_prefix(struct fg_etcd *e, const char *prefix, struct fg_etcd_range *out)
{
	memset(out, 0, sizeof(*out));
	int rc = call(e, "/v3/kv/range", json_pack("{s:o, s:o, s:o}", "key", b64_json(prefix, strlen(prefix)), "range_end",
						   prefix_end(prefix), "limit", i64_json(FG_ETCD_MAX_KVS)));
	return rc ? rc : fg_etcd_parse_range(e->body, e->len, out, e->error, sizeof(e->error));
}

static json_t *puts_json(const struct fg_etcd_put *p, size_t n)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < n; i++) {
		json_t *put = json_pack("{s:o, s:o}", "key", b64_json(p[i].key, strlen(p[i].key)), "value",
					b64_json(p[i].value, strlen(p[i].value)));
		if (put && p[i].lease)
			json_object_set_new(put, "lease", i64_json(p[i].lease));
		json_array_append_new(arr, json_pack("{s:o}", "request_put", put));
	}
	return arr;
}

static json_t *cmp_json(const struct fg_etcd_cmp *c)
{
	/* MOD_AT_MOST is MOD < revision + 1 (a key deleted since does not
	 * count); a key that does not exist has version 0. */
	bool absent = c->op == FG_ETCD_ABSENT;
	json_t *j = json_pack("{s:o, s:s, s:s, s:o}", "key", b64_json(c->key, strlen(c->key)), "target",
			      absent ? "VERSION" : "MOD", "result", c->op == FG_ETCD_MOD_AT_MOST ? "LESS" : "EQUAL",
			      absent ? "version" : "mod_revision",
			      i64_json(absent ? 0 : c->op == FG_ETCD_MOD_AT_MOST ? c->revision + 1 : c->revision));
	if (j && c->prefix)
		json_object_set_new(j, "range_end", prefix_end(c->key));
	return j;
}

int fg_etcd_txn(struct fg_etcd *e, const struct fg_etcd_cmp *cmps, size_t n_cmps, const struct fg_etcd_put *then,
		size_t n_then, const struct fg_etcd_put *otherwise, size_t n_otherwise, bool *succeeded)
{
	json_t *req = json_pack("{s:o, s:o}", "success", puts_json(then, n_then), "failure",
				puts_json(otherwise, n_otherwise));
	json_t *compare = json_array();
	for (size_t i = 0; i < n_cmps; i++)
		json_array_append_new(compare, cmp_json(&cmps[i]));
	if (req && n_cmps)
		json_object_set_new(req, "compare", compare);
	else
		json_decref(compare);
	*succeeded = false;
	int rc = call(e, "/v3/kv/txn", req);
	return rc ? rc : fg_etcd_parse_txn(e->body, e->len, succeeded, e->error, sizeof(e->error));
}
