/* SPDX-License-Identifier: Apache-2.0 */
/*
 * etcd — the few etcd v3 calls cluster mode needs (control/cluster.h),
 * through etcd's JSON gateway (POST /v3/...: keys and values base64, 64-bit
 * numbers as strings) over libcurl: lease grant, keep-alive and revoke, a
 * prefix range read, and a transaction of puts guarded by "no key under a
 * prefix was modified after a revision".  Why the gateway over libcurl and
 * not a gRPC client: docs/scale-out.md ("Why etcd's JSON gateway").
 *
 * Every call is bounded: the request's time (connect and total), the
 * answer's size (FG_ETCD_MAX_BODY), the keys and values a range may return
 * (FG_ETCD_MAX_KVS, FG_ETCD_KEY_MAX, FG_ETCD_VALUE_MAX); an answer past a
 * bound, or not the JSON etcd sends, is an error, never a partial result.
 * A call that cannot reach an endpoint (transport error or HTTP 5xx) tries
 * the next one; the endpoint that answered is tried first next time.
 *
 * TLS (https:// endpoints): the server's certificate is verified against
 * the CA file (or the system's CAs) and the endpoint's host, or a server
 * name given for endpoints that are addresses; a client certificate and key
 * for etcd's --client-cert-auth.  Authentication (etcd's `auth enable`): a
 * user and password exchanged for a token at the first call, sent with every
 * call, and exchanged again once when etcd says the token is no longer
 * valid (its TTL); https only (settings refuse it over http).
 *
 * Errors: 0; -EIO (no endpoint answered: errmsg says why); -ENOENT (etcd
 * answered "not found": the lease is gone); -EACCES (etcd refused the user
 * and password); -EPROTO (an answer that is not what etcd sends, or another
 * etcd error: errmsg has its message).
 *
 * Thread contract: one thread uses a client at a time (the cluster thread);
 * the parsers are pure and reentrant.
 */
#ifndef FG_ETCD_H
#define FG_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FG_ETCD_MAX_BODY (8u << 20) /* the largest answer read */
#define FG_ETCD_MAX_KVS 1024u       /* keys one range may return */
#define FG_ETCD_KEY_MAX 256u        /* bytes of a key, with its terminator */
#define FG_ETCD_VALUE_MAX 16384u    /* bytes of a value, with a terminator */

struct fg_etcd;

/* TLS and authentication; every field may be NULL or "" (none). */
struct fg_etcd_opts {
	const char *ca, *cert, *key; /* PEM files: the CAs of etcd's certificate; this client's certificate and key */
	const char *server_name;     /* the name etcd's certificate must carry; "": each endpoint's host */
	const char *user, *password; /* etcd's authentication */
};

/* A client for the comma-separated "http(s)://HOST:PORT" list urls (checked
 * with fg_urls_parse), each call bounded by timeout_ms.  NULL with the
 * reason in why.  The client keeps copies of opts' strings (the password
 * wiped at free). */
struct fg_etcd *fg_etcd_new(const char *urls, long timeout_ms, const struct fg_etcd_opts *opts, char *why,
			    size_t whylen);
void fg_etcd_free(struct fg_etcd *e);
/* The last error's text ("" after a success). */
const char *fg_etcd_errmsg(const struct fg_etcd *e);
/* The endpoint the last call went to. */
const char *fg_etcd_endpoint(const struct fg_etcd *e);

int fg_etcd_lease_grant(struct fg_etcd *e, int64_t ttl_s, int64_t *id, int64_t *granted_ttl_s);
/* *ttl_s: the lease's remaining TTL; 0 and -ENOENT when it no longer exists. */
int fg_etcd_lease_keepalive(struct fg_etcd *e, int64_t id, int64_t *ttl_s);
int fg_etcd_lease_revoke(struct fg_etcd *e, int64_t id);

struct fg_etcd_kv {
	bool bad;             /* its key (then "") or value (then "") was not what etcd sends or past the bounds */
	char key[FG_ETCD_KEY_MAX];
	char *value;          /* decoded, NUL-terminated (owned by the range) */
	size_t value_len;
	int64_t mod_revision;
	int64_t lease;
};

struct fg_etcd_range {
	int64_t revision;     /* the store's revision the range was read at */
	size_t n;
	struct fg_etcd_kv *kvs;
};

/* Every key under prefix, at one revision; more than FG_ETCD_MAX_KVS is an
 * error.  out is fg_etcd_range_free'd by the caller, also after an error. */
int fg_etcd_range_prefix(struct fg_etcd *e, const char *prefix, struct fg_etcd_range *out);
void fg_etcd_range_free(struct fg_etcd_range *r);

struct fg_etcd_put {
	const char *key, *value;
	int64_t lease;        /* 0: none */
};

/* A transaction's condition on a key (or, with prefix, every key under it). */
struct fg_etcd_cmp {
	const char *key;
	bool prefix;
	enum { FG_ETCD_MOD_AT_MOST, FG_ETCD_MOD_EQUAL, FG_ETCD_ABSENT } op;
	int64_t revision;     /* MOD_AT_MOST: no key modified after it; MOD_EQUAL: last modified at it */
};

/*
 * A transaction: if every condition in cmps holds, the puts in `then`,
 * else those in `otherwise`.  *succeeded says which ran.
 */
int fg_etcd_txn(struct fg_etcd *e, const struct fg_etcd_cmp *cmps, size_t n_cmps, const struct fg_etcd_put *then,
		size_t n_then, const struct fg_etcd_put *otherwise, size_t n_otherwise, bool *succeeded);

/* Calls from now on give up at this time (fg_now_ns clock; 0: no limit),
 * whatever their own time-out and however many endpoints are left. */
void fg_etcd_set_deadline(struct fg_etcd *e, uint64_t deadline_ns);

/* The answer parsers (also the fuzz target's entries): 0, -ENOENT, -EPROTO
 * with the reason in why. */
int fg_etcd_parse_range(const char *body, size_t len, struct fg_etcd_range *out, char *why, size_t whylen);
int fg_etcd_parse_lease(const char *body, size_t len, int64_t *id, int64_t *ttl_s, char *why, size_t whylen);
int fg_etcd_parse_txn(const char *body, size_t len, bool *succeeded, char *why, size_t whylen);

#endif
