/* SPDX-License-Identifier: Apache-2.0 */
/* control — control socket server and config publication; see control.h. */
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <stdarg.h>
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

#include "backendpool.h"
#include "clock.h"
#include "defs.h"
#include "log.h"
#include "logwatch.h"
#include "readfile.h"
#include "settings_table.h"
#include "status.h"

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
};

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

/* After publishing generation gen: wait (bounded) until every worker follows
 * it or has said why it cannot, so that the answer tells what is in force.
 * Workers poll every few microseconds; the bound covers a stalled one. */
static json_t *wait_for_workers(const struct fg_control_view *view, uint64_t gen, struct fg_errors *warnings)
{
	json_t *refused = json_array();
	uint64_t deadline = fg_now_ns() + FG_CONTROL_FOLLOW_WAIT_NS;
	unsigned decided = 0;
	while (decided < view->n_workers && fg_now_ns() < deadline) {
		decided = 0;
		for (unsigned w = 0; w < view->n_workers; w++) {
			const struct fg_worker_stats *s = view->worker_stats[w];
			decided += __atomic_load_n(&s->config_generation, __ATOMIC_ACQUIRE) >= gen ||
				   __atomic_load_n(&s->config_refused_generation, __ATOMIC_ACQUIRE) >= gen;
		}
		if (decided < view->n_workers)
			usleep(200);
	}
	for (unsigned w = 0; w < view->n_workers; w++) {
		const struct fg_worker_stats *s = view->worker_stats[w];
		if (__atomic_load_n(&s->config_generation, __ATOMIC_ACQUIRE) >= gen)
			continue;
		/* Acquire: the worker stored its error before the generation (release). */
		bool said = __atomic_load_n(&s->config_refused_generation, __ATOMIC_ACQUIRE) >= gen;
		uint32_t err = FG_STAT_GET(s->config_error);
		said = said && err;
		const char *why = !said ? "did not follow within the wait (stalled or busy)"
			: err == ENOSPC ? "no free priority-level slots: too many levels are still draining; it refuses "
					  "requests until they drain"
			: err == ENOMEM ? "out of memory; it refuses requests and retries at every poll"
			: "could not follow it";
		char path[32];
		snprintf(path, sizeof(path), "worker %u", w);
		fg_errors_add(warnings, path, "runs no configuration: %s", why);
		json_array_append_new(refused, json_pack("{s:i, s:s}", "worker", (int)w, "reason", why));
	}
	return refused;
}

/* A configuration change ended (not a dry run): for /metrics. */
static void count_change(const struct fg_control_view *view, bool ok)
{
	struct fg_config_changes *c = view->changes;
	if (!c)
		return;
	uint64_t *n = ok ? &c->succeeded : &c->failed;
	__atomic_store_n(n, *n + 1, __ATOMIC_RELAXED);
	__atomic_store_n(ok ? &c->last_success_s : &c->last_failure_s, (uint64_t)time(NULL), __ATOMIC_RELAXED);
}

#define FG_KEPT_NAMED 4 /* objects a merge kept that its warning names */

/* What a change is, for its answer and the history. */
struct change {
	const char *what;              /* "apply", "delete", "rollback", ...: the history's summary starts so */
	int64_t uid;                   /* who asks: the peer's uid, -1 for the daemon (start-up, SIGHUP) */
	const struct fg_fc_set *input; /* the objects the request named (unchanged ones are listed); may be NULL */
	const char *removed;           /* the word for objects that go: "deleted", "pruned" */
	int applied;                   /* objects in the request */
	bool dry;
	bool force;                    /* publish even if objects and settings' texts are equal (a backend's
					* administrative state) */
};

/* The capacity relation changes only with the server limit or the backends. */
static bool capacity_touched(const struct fg_settings *a, const struct fg_settings *b)
{
	const struct fg_setting *backends = fg_setting_by_name("backends");
	json_t *x = fg_setting_json(backends, a), *y = fg_setting_json(backends, b);
	bool touched = a->seat_limit != b->seat_limit || !json_equal(x, y);
	json_decref(x);
	json_decref(y);
	return touched;
}

/* The history's one line: "apply: 1 created, 2 configured; settings: a, b". */
static void change_summary(const struct change *ch, json_t *diff, json_t *sdiff, char *buf, size_t cap)
{
	static const char *const counted[] = { "created", "configured", "deleted", "pruned" };
	size_t n = (size_t)snprintf(buf, cap, "%s:", ch->what);
	bool any = false;
	for (size_t i = 0; i < sizeof(counted) / sizeof(counted[0]) && n < cap; i++) {
		json_int_t k = json_integer_value(json_object_get(diff, counted[i]));
		if (k) {
			n += (size_t)snprintf(buf + n, cap - n, "%s%lld %s", any ? ", " : " ", (long long)k, counted[i]);
			any = true;
		}
	}
	size_t i;
	json_t *l;
	json_array_foreach(sdiff, i, l) {
		if (n >= cap)
			break;
		const char *line = json_string_value(l);
		n += (size_t)snprintf(buf + n, cap - n, "%s%.*s", i ? ", " : any ? "; settings " : " settings ",
				      (int)strcspn(line, ":"), line);
	}
}

/* Compile a candidate object set with candidate settings and, unless dry or
 * nothing changes, publish them as the next generation; on success both
 * replace the view's.  The candidate always holds the mandatory objects
 * (what `get` shows is what is in force); warnings (unknown fields, dangling
 * schemas, capacity) go with the answer, and so does what the change does:
 * per object created/configured/unchanged/deleted, and every level's seat
 * limits before and after (a level's limit depends on all levels' shares).
 * A change that changes nothing publishes nothing: the generation stays. */
static char *commit_ex(const struct fg_control_view *view, struct fg_fc_set *candidate,
		       const struct fg_settings *next_settings, const struct change *ch, struct fg_errors *warnings,
		       json_t *extra)
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
		if (!ch->dry)
			count_change(view, false);
		return errs.count ? errors_response(&errs) : error_response("out of memory");
	}
	if (capacity_touched(view->settings, &settings))
		fg_settings_warn_capacity(&settings, warnings);
	struct fg_errors ignored = { .len = 0 };
	struct fg_fc_config *before = fg_fc_compile(view->objects, view->settings->seat_limit, &ignored);
	json_t *diff = fg_fc_set_diff(view->objects, candidate, ch->input, ch->removed);
	json_t *levels = fg_fc_levels_diff(before, fc);
	json_t *sdiff = fg_settings_diff(view->settings, &settings);
	fg_fc_config_free(before);
	bool changed = ch->force || !fg_fc_set_equal(view->objects, candidate) || json_array_size(sdiff);
	json_t *summary = json_pack("{s:i, s:i, s:i, s:o, s:O, s:O, s:O, s:b}", "objects", ch->applied, "priorityLevels",
				    (int)fc->n_levels, "flowSchemas", (int)fc->n_schemas, "warnings", lines_json(warnings),
				    "changes", diff, "levels", levels, "settings", sdiff, "changed", changed);
	if (extra)
		json_object_update(summary, extra);
	if (ch->dry || !changed) {
		fg_fc_config_free(fc);
		fg_fc_set_free(candidate);
		if (!ch->dry) { /* nothing to publish: the generation in force answers */
			rcu_thread_online();
			uint64_t gen = rcu_dereference(*view->config_ptr)->generation;
			rcu_thread_offline();
			json_object_set_new(summary, "generation", json_integer((json_int_t)gen));
			json_object_set_new(summary, "workersNotFollowing", json_array());
		}
		json_decref(diff);
		json_decref(levels);
		json_decref(sdiff);
		return ok_response(summary);
	}
	rcu_thread_online();
	uint64_t generation = rcu_dereference(*view->config_ptr)->generation + 1;
	struct fg_config *next = fg_config_build(&settings, fc, generation);
	if (next) {
		fg_config_keep_backend_slots(next, rcu_dereference(*view->config_ptr));
		fg_config_keep_level_limits(next, rcu_dereference(*view->config_ptr));
		fg_config_publish(view->config_ptr, next);
	}
	rcu_thread_offline();
	if (!next) {
		fg_fc_set_free(candidate);
		json_decref(summary);
		json_decref(diff);
		json_decref(levels);
		json_decref(sdiff);
		count_change(view, false);
		return error_response("out of memory");
	}
	count_change(view, true);
	/* The set is swapped in place: the view is shared by value with the thread. */
	fg_fc_set_swap(view->objects, candidate);
	fg_fc_set_free(candidate);
	*view->settings = settings;
	if (view->history) {
		char line[FG_HISTORY_SUMMARY_MAX];
		change_summary(ch, diff, sdiff, line, sizeof(line));
		if (fg_history_record(view->history, generation, time(NULL), ch->uid, line, view->objects,
				      view->settings, view->settings->config_history))
			fg_errors_add(warnings, "history", "out of memory: generation %llu is not kept for rollback",
				      (unsigned long long)generation);
	}
	json_decref(diff);
	json_decref(levels);
	json_decref(sdiff);
	json_object_set_new(summary, "generation", json_integer((json_int_t)generation));
	json_t *refused = wait_for_workers(view, generation, warnings);
	json_object_set_new(summary, "workersNotFollowing", refused);
	json_object_set_new(summary, "warnings", lines_json(warnings));
	return ok_response(summary);
}

/* One input to apply: JSON or YAML text. */
struct apply_text {
	const char *data;
	size_t len;
};

/* What the texts are applied onto. */
enum apply_base {
	BASE_LIVE,  /* kubectl apply: merged into what is in force */
	BASE_EMPTY, /* validate standalone: the texts alone (and the mandatory objects) */
	BASE_WHOLE, /* apply --prune: the texts are the whole set, as `fairgate --config` reads them */
};

/* A merge leaves objects the input does not name: then the input alone (as
 * `fairgate --config` reads a file) is not what is in force; say so once. */
static void warn_kept(const struct fg_fc_set *result, const struct fg_fc_set *input, struct fg_errors *warnings)
{
	json_t *kept = json_array();
	for (int k = 0; k < FG_FC_N_KINDS && kept; k++) {
		json_t *all = fg_fc_set_get(result, (enum fg_fc_kind)k, NULL), *o;
		size_t i;
		json_array_foreach(all, i, o) {
			const char *name = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
			if (!fg_fc_set_has(input, (enum fg_fc_kind)k, name) &&
			    !fg_fc_is_mandatory_object((enum fg_fc_kind)k, name))
				json_array_append_new(kept, json_sprintf("%s/%s", fg_fc_kind_name((enum fg_fc_kind)k), name));
		}
		json_decref(all);
	}
	size_t n = json_array_size(kept);
	if (n) {
		char names[256] = "";
		size_t len = 0;
		for (size_t i = 0; i < n && i < FG_KEPT_NAMED && len < sizeof(names); i++)
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "",
						json_string_value(json_array_get(kept, i)));
		fg_errors_add(warnings, "merge",
			      "%zu object(s) in force are not in this input (%s%s): they stay, as kubectl apply leaves "
			      "them; the input alone (fairgate --config, validate) would not run them; apply --prune "
			      "makes what is in force equal to the input", n, names, n > FG_KEPT_NAMED ? ", ..." : "");
	}
	json_decref(kept);
}

/* Apply texts in order onto the base and commit them, or only check them
 * (dry): one change, all or nothing.  A refusal's answer names the errors;
 * *failed is the text that had them. */
static char *apply_texts_ex(const struct fg_control_view *view, const struct apply_text *texts, unsigned n, bool strict,
			    bool dry, enum apply_base base, const char *what, int64_t uid, unsigned *failed)
{
	struct fg_fc_set *candidate = base == BASE_LIVE ? fg_fc_set_share(view->objects) : fg_fc_set_new();
	struct fg_fc_set *input = fg_fc_set_new();
	if (!candidate || !input) {
		fg_fc_set_free(candidate);
		fg_fc_set_free(input);
		return error_response("out of memory");
	}
	struct fg_errors errs = { .len = 0 }, warnings = { .len = 0 };
	struct fg_settings settings = *view->settings;
	struct fg_fc_apply_opts opts = { .strict = strict || view->settings->strict_fields, .warnings = &warnings,
					 .input = input };
	int applied = 0;
	for (unsigned i = 0; i < n; i++) {
		int k = fg_fc_set_apply_opts(candidate, (const uint8_t *)texts[i].data, texts[i].len, &settings, &opts,
					     &errs);
		if (k < 0) {
			fg_fc_set_free(candidate);
			fg_fc_set_free(input);
			if (!dry)
				count_change(view, false);
			*failed = i;
			return errors_response(&errs);
		}
		applied += k;
	}
	fg_settings_keep_backend_admin(&settings, view->settings);
	/* One meaning for a file (configuration.md): without schemas and
	 * levels it stands for the bootstrap ones, as at start-up. */
	if (base == BASE_WHOLE && fg_fc_set_or_bootstrap(candidate)) {
		fg_fc_set_free(candidate);
		fg_fc_set_free(input);
		return error_response("out of memory");
	}
	if (base == BASE_LIVE)
		warn_kept(candidate, input, &warnings);
	struct change ch = { .what = what, .uid = uid, .input = input,
			     .removed = base == BASE_WHOLE ? "pruned" : "deleted", .applied = applied, .dry = dry };
	char *out = commit_ex(view, candidate, &settings, &ch, &warnings, NULL);
	fg_fc_set_free(input);
	return out;
}

static char *cmd_apply(const struct fg_control_view *view, json_t *req, bool dry, int64_t uid)
{
	json_t *data = json_object_get(req, "data");
	if (!json_is_string(data))
		return error_response("%s needs \"data\": the objects as JSON or YAML text", dry ? "validate" : "apply");
	json_t *strict = json_object_get(req, "strict"), *prune = json_object_get(req, "prune");
	if (strict && !json_is_boolean(strict))
		return error_response("\"strict\" must be true or false");
	if (prune && !json_is_boolean(prune))
		return error_response("\"prune\" must be true or false");
	bool standalone = dry && json_is_true(json_object_get(req, "standalone"));
	if (standalone && json_is_true(prune))
		return error_response("\"standalone\" and \"prune\" exclude each other");
	struct apply_text text = { json_string_value(data), json_string_length(data) };
	unsigned failed;
	enum apply_base base = json_is_true(prune) ? BASE_WHOLE : standalone ? BASE_EMPTY : BASE_LIVE;
	return apply_texts_ex(view, &text, 1, json_is_true(strict), dry, base,
			      json_is_true(prune) ? "apply --prune" : "apply", uid, &failed);
}

static int kind_of(json_t *req, char **err)
{
	const char *k = json_string_value(json_object_get(req, "kind"));
	int kind = k ? fg_fc_kind_parse(k) : -1;
	if (kind < 0)
		*err = error_response("\"kind\" must be FlowSchema, PriorityLevelConfiguration or FairSharing "
				      "(or fs, plc, fsh)");
	return kind;
}

static char *cmd_delete_data(const struct fg_control_view *view, json_t *req, int64_t uid);

static char *cmd_delete(const struct fg_control_view *view, json_t *req, int64_t uid)
{
	if (json_object_get(req, "data"))
		return cmd_delete_data(view, req, uid);
	char *err = NULL;
	int kind = kind_of(req, &err);
	const char *name = json_string_value(json_object_get(req, "name"));
	if (kind < 0)
		return err;
	if (!name)
		return error_response("delete needs \"name\"");
	struct fg_fc_set *candidate = fg_fc_set_share(view->objects);
	if (!candidate)
		return error_response("out of memory");
	if (fg_fc_set_delete(candidate, (enum fg_fc_kind)kind, name)) {
		fg_fc_set_free(candidate);
		return error_response("%s \"%s\" not found", fg_fc_kind_name((enum fg_fc_kind)kind), name);
	}
	/* As Kubernetes: a deleted mandatory object comes back as its built-in copy. */
	struct fg_errors warnings = { .len = 0 };
	json_t *extra = json_pack("{s:b}", "restored", fg_fc_is_mandatory_object((enum fg_fc_kind)kind, name));
	char what[160];
	snprintf(what, sizeof(what), "delete %s/%.100s", fg_fc_kind_name((enum fg_fc_kind)kind), name);
	struct change ch = { .what = what, .uid = uid, .removed = "deleted", .applied = 1 };
	char *out = commit_ex(view, candidate, NULL, &ch, &warnings, extra);
	json_decref(extra);
	return out;
}

/* backend drain|disable|enable|remove ADDR:PORT, or add ADDR:PORT[@MAC][,seats=N]:
 * a change of the settings' backends list (or of one's administrative
 * state), published as the next generation like an apply. */
static char *cmd_backend(const struct fg_control_view *view, json_t *req, int64_t uid)
{
	static const char *const actions[] = { "enable", "drain", "disable", NULL /* not an action */, "add",
					       "remove" };
	/* The first three actions are the administrative states of the same number. */
	enum { ACT_ENABLE = FG_BACKEND_ENABLED, ACT_DRAIN = FG_BACKEND_DRAIN, ACT_DISABLE = FG_BACKEND_DISABLED,
	       ACT_ADD = FG_BACKEND_ADMIN__COUNT, ACT_REMOVE, ACT__COUNT };
	_Static_assert(FG_BACKEND_ENABLED == 0 && FG_BACKEND_DRAIN == 1 && FG_BACKEND_DISABLED == 2,
		       "actions[] follows enum fg_backend_admin");
	const char *a = json_string_value(json_object_get(req, "action"));
	unsigned act = 0;
	while (a && act < ACT__COUNT && (!actions[act] || strcmp(a, actions[act])))
		act++;
	if (!a || act == ACT__COUNT)
		return error_response("backend needs \"action\": enable, drain, disable, add or remove");
	json_t *jaddr = json_object_get(req, "address");
	const char *spec = json_string_value(jaddr);
	if (!spec || json_string_length(jaddr) >= FG_BACKEND_SPEC_MAX)
		return error_response("backend %s needs \"address\": ADDR:PORT%s (at most %u characters)", actions[act],
				      act == ACT_ADD ? "[@MAC][,seats=N]" : "", FG_BACKEND_SPEC_MAX - 1);
	struct fg_settings next = *view->settings;
	struct fg_endpoint ep;
	int at;
	if (act == ACT_ADD) {
		int rc = fg_settings_add_backend(&next, spec);
		if (rc == -ENOSPC)
			return error_response("too many backends (at most %u)", FG_MAX_BACKENDS);
		if (rc)
			return error_response("bad backend \"%.95s\": expected ADDR:PORT[@MAC][,seats=N] (seats 1-%u)",
					      spec, FG_MAX_BACKEND_SEATS);
		ep = next.backends[next.n_backends - 1].ep;
		if (fg_settings_find_backend(view->settings, &ep) >= 0)
			return error_response("backend %.95s is already listed", spec);
	} else {
		if (fg_endpoint_parse(spec, &ep))
			return error_response("bad backend address \"%.95s\": expected ADDR:PORT", spec);
		if ((at = fg_settings_find_backend(&next, &ep)) < 0)
			return error_response("no backend %.95s (status lists them)", spec);
		if (act == ACT_REMOVE) /* the others keep their order (get, --help-settings) */
			memmove(&next.backends[at], &next.backends[at + 1],
				sizeof(next.backends[0]) * (--next.n_backends - (uint32_t)at));
		else
			next.backends[at].admin = (uint8_t)act;
	}
	struct fg_fc_set *candidate = fg_fc_set_share(view->objects);
	if (!candidate)
		return error_response("out of memory");
	char addr[64];
	struct fg_errors warnings = { .len = 0 };
	uint32_t enabled = 0;
	for (uint32_t i = 0; i < next.n_backends; i++)
		enabled += next.backends[i].admin == FG_BACKEND_ENABLED;
	if (!enabled)
		fg_errors_add(&warnings, "backends", "none is enabled now: new requests are answered no-backend");
	json_t *extra = json_pack("{s:s, s:s}", "backend", fg_endpoint_format(&ep, addr, sizeof(addr)), "action",
				  actions[act]);
	char what[128];
	snprintf(what, sizeof(what), "backend %s %s", actions[act], addr);
	/* An administrative state is not a setting's text: the change is
	 * published even when nothing else differs. */
	struct change ch = { .what = what, .uid = uid, .removed = "deleted", .force = true };
	char *out = commit_ex(view, candidate, &next, &ch, &warnings, extra);
	json_decref(extra);
	return out;
}
static char *cmd_get_all(const struct fg_control_view *view, json_t *req);

static char *cmd_get(const struct fg_control_view *view, json_t *req)
{
	const char *k = json_string_value(json_object_get(req, "kind"));
	if (k && (!strcmp(k, "all") || !strcmp(k, "settings") || !strcmp(k, "FairgateSettings")))
		return cmd_get_all(view, req);
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
	json_t *why = json_object_get(req, "why");
	if (why && !json_is_boolean(why)) {
		free(groups);
		return error_response("\"why\" must be true or false");
	}
	rcu_thread_online();
	const struct fg_fc_config *fc = rcu_dereference(*view->config_ptr)->fc;
	json_t *result = fg_fc_explain(fc, &r);
	if (json_is_true(why))
		json_object_set_new(result, "why", fg_fc_explain_why(fc, &r));
	rcu_thread_offline();
	free(groups);
	json_t *state = fg_status_level_json(view, json_string_value(json_object_get(result, "priorityLevel")));
	if (state)
		json_object_set_new(result, "priorityLevelState", state);
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

/* A visibility answer as a control answer: the document, or its error line. */
static char *vis_response(struct fg_vis_answer *a, bool json)
{
	char *out;
	if (a->status != 200) {
		json_t *doc = json_loadb(a->body, a->len, 0, NULL);
		const char *msg = json_string_value(json_object_get(doc, "message"));
		out = error_response("%.*s", msg ? 400 : (int)strcspn(a->body, "\n"), msg ? msg : a->body);
		json_decref(doc);
	} else {
		json_t *doc = json ? json_loadb(a->body, a->len, 0, NULL) : json_pack("{s:s%}", "table", a->body, a->len);
		out = doc ? ok_response(doc) : error_response("cannot encode the answer");
	}
	free(a->body);
	return out;
}

/* pending: a level's waiting requests in dispatch order (docs/visibility.md);
 * the same parameters, bounds and parser as the HTTP query. */
static char *cmd_pending(const struct fg_control_view *view, json_t *req)
{
	const char *level = json_string_value(json_object_get(req, "level"));
	if (!view->vis)
		return error_response("pending requests are not available (no snapshot boxes)");
	if (!level)
		return error_response("pending needs \"level\"");
	static const char *const params[] = { "limit", "offset", "flowSchema", "distinguisher", "details" };
	struct fg_kv kv[5];
	char nums[2][24];
	size_t n = 0;
	for (size_t i = 0; i < 5; i++) {
		json_t *v = json_object_get(req, params[i]);
		if (!v)
			continue;
		if (i < 2 && json_is_integer(v)) {
			snprintf(nums[i], sizeof(nums[i]), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
			kv[n++] = (struct fg_kv){ params[i], nums[i] };
		} else if (i == 4 && json_is_boolean(v)) {
			kv[n++] = (struct fg_kv){ params[i], json_is_true(v) ? "1" : "0" };
		} else if (i >= 2 && i < 4 && json_is_string(v)) {
			kv[n++] = (struct fg_kv){ params[i], json_string_value(v) };
		} else {
			return error_response("\"%s\" has the wrong type", params[i]);
		}
	}
	struct fg_pending_query q;
	char err[160];
	if (fg_pending_parse_query(kv, n, &q, err, sizeof(err)))
		return error_response("%s", err);
	struct fg_vis_answer a;
	fg_vis_pending(view->vis, level, &q, &a);
	return a.body ? vis_response(&a, true) : error_response("out of memory");
}

/* dump: Kubernetes' dump_priority_levels / dump_queues / dump_requests. */
static char *cmd_dump(const struct fg_control_view *view, json_t *req)
{
	static const char *const what[] = { [FG_VIS_DUMP_LEVELS] = "levels", [FG_VIS_DUMP_QUEUES] = "queues",
					     [FG_VIS_DUMP_REQUESTS] = "requests" };
	const char *w = json_string_value(json_object_get(req, "what"));
	const char *format = json_string_value(json_object_get(req, "format"));
	size_t i = 0;
	while (w && i < 3 && strcmp(w, what[i]))
		i++;
	if (!view->vis)
		return error_response("dumps are not available (no snapshot boxes)");
	if (!w || i == 3)
		return error_response("dump needs \"what\": levels, queues or requests");
	if (format && strcmp(format, "table") && strcmp(format, "json"))
		return error_response("\"format\" must be table or json");
	bool json = format && !strcmp(format, "json");
	struct fg_vis_answer a;
	fg_vis_dump(view->vis, (enum fg_vis_dump)i, json_is_true(json_object_get(req, "details")), json, &a);
	return a.body ? vis_response(&a, json) : error_response("out of memory");
}

/* delete with "data": every object the text names, as `kubectl delete -f`:
 * those in force go in one change (mandatory ones come back as their
 * built-in copies), the others are listed as not found. */
static char *cmd_delete_data(const struct fg_control_view *view, json_t *req, int64_t uid)
{
	json_t *data = json_object_get(req, "data");
	if (!json_is_string(data))
		return error_response("delete needs \"data\": the objects as JSON or YAML text (or \"kind\" and \"name\")");
	struct fg_errors errs = { .len = 0 }, warnings = { .len = 0 };
	json_t *ids = fg_fc_document_ids((const uint8_t *)json_string_value(data), json_string_length(data), &errs);
	if (!ids)
		return errs.count ? errors_response(&errs) : error_response("out of memory");
	struct fg_fc_set *candidate = fg_fc_set_share(view->objects);
	json_t *not_found = json_array(), *restored = json_array(), *id;
	if (!candidate || !not_found || !restored) {
		fg_fc_set_free(candidate);
		json_decref(ids);
		json_decref(not_found);
		json_decref(restored);
		return error_response("out of memory");
	}
	int deleted = 0;
	size_t i;
	json_array_foreach(ids, i, id) {
		const char *kind = json_string_value(json_object_get(id, "kind"));
		const char *name = json_string_value(json_object_get(id, "name"));
		int k = fg_fc_kind_parse(kind);
		if (k < 0) {
			fg_errors_add(&warnings, "FairgateSettings", "settings cannot be deleted; the object was ignored");
			continue;
		}
		if (fg_fc_set_delete(candidate, (enum fg_fc_kind)k, name)) {
			json_array_append(not_found, id);
			continue;
		}
		deleted++;
		if (fg_fc_is_mandatory_object((enum fg_fc_kind)k, name))
			json_array_append(restored, id);
	}
	json_decref(ids);
	json_t *extra = json_pack("{s:o, s:o}", "notFound", not_found, "restored", restored);
	struct change ch = { .what = "delete -f", .uid = uid, .removed = "deleted", .applied = deleted };
	char *out = commit_ex(view, candidate, NULL, &ch, &warnings, extra);
	json_decref(extra);
	return out;
}

/* get all: every object in force and the settings, one List that applies
 * back (`fairgatectl get all -o yaml > f; apply -f f` changes nothing);
 * get settings: the FairgateSettings object alone. */
static char *cmd_get_all(const struct fg_control_view *view, json_t *req)
{
	json_t *settings = fg_settings_json(view->settings);
	if (strcmp(json_string_value(json_object_get(req, "kind")), "all"))
		return settings ? ok_response(settings) : error_response("out of memory");
	json_t *items = json_array();
	for (int k = 0; k < FG_FC_N_KINDS; k++) { /* levels first: the others refer to them */
		json_t *some = fg_fc_set_get(view->objects, fg_fc_kind_order[k], NULL);
		json_array_extend(items, some);
		json_decref(some);
	}
	json_array_append_new(items, settings);
	return ok_response(json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List", "items", items));
}

/* history: the kept generations, oldest first. */
static char *cmd_history(const struct fg_control_view *view, json_t *req)
{
	(void)req;
	if (!view->history)
		return error_response("no configuration history is kept here");
	rcu_thread_online();
	uint64_t gen = rcu_dereference(*view->config_ptr)->generation;
	rcu_thread_offline();
	return ok_response(json_pack("{s:I, s:i, s:o}", "generation", (json_int_t)gen, "keep",
				     (int)view->settings->config_history, "items", fg_history_json(view->history)));
}

/* rollback: make a kept generation's objects and settings the next one
 * (kubectl rollout undo: the previous one unless "to" names another). */
static char *cmd_rollback(const struct fg_control_view *view, json_t *req, int64_t uid)
{
	if (!view->history)
		return error_response("no configuration history is kept here");
	json_t *to = json_object_get(req, "to");
	if (to && (!json_is_integer(to) || json_integer_value(to) < 1))
		return error_response("\"to\" must be a generation number (fairgatectl history lists them)");
	rcu_thread_online();
	uint64_t gen = rcu_dereference(*view->config_ptr)->generation;
	rcu_thread_offline();
	const struct fg_history_entry *e = to ? fg_history_find(view->history, (uint64_t)json_integer_value(to))
					      : fg_history_before(view->history, gen);
	if (!e && to)
		return error_response("generation %lld is not kept (configHistory %u; fairgatectl history lists those kept)",
				      (long long)json_integer_value(to), view->settings->config_history);
	if (!e)
		return error_response("no generation before %llu is kept to roll back to", (unsigned long long)gen);
	struct fg_fc_set *candidate = fg_fc_set_share(e->objects);
	if (!candidate)
		return error_response("out of memory");
	struct fg_errors warnings = { .len = 0 };
	char what[64];
	snprintf(what, sizeof(what), "rollback to %llu", (unsigned long long)e->generation);
	json_t *extra = json_pack("{s:I}", "rolledBackTo", (json_int_t)e->generation);
	struct change ch = { .what = what, .uid = uid, .removed = "deleted" };
	/* The kept settings, but this daemon's restart-only ones: they cannot
	 * differ anyway, and configHistory stays as it is now. */
	struct fg_settings settings = *e->settings;
	settings.config_history = view->settings->config_history;
	/* Drained or disabled backends stay so: operations, not configuration. */
	fg_settings_keep_backend_admin(&settings, view->settings);
	char *out = commit_ex(view, candidate, &settings, &ch, &warnings, extra);
	json_decref(extra);
	return out;
}

static char *cmd_validate(const struct fg_control_view *view, json_t *req) { return cmd_apply(view, req, true, -1); }
static char *cmd_apply_live(const struct fg_control_view *view, json_t *req, int64_t uid)
{
	return cmd_apply(view, req, false, uid);
}

/* The control commands: those that read, and those that change the
 * configuration (an admin peer's, whose uid the history keeps). */
static const struct command {
	const char *name;
	char *(*read)(const struct fg_control_view *view, json_t *req);
	char *(*change)(const struct fg_control_view *view, json_t *req, int64_t uid);
} commands[] = {
	{ "status", cmd_status, NULL },     { "version", cmd_version, NULL }, { "get", cmd_get, NULL },
	{ "explain", cmd_explain, NULL },   { "validate", cmd_validate, NULL }, { "apply", NULL, cmd_apply_live },
	{ "delete", NULL, cmd_delete },     { "pending", cmd_pending, NULL }, { "dump", cmd_dump, NULL },
	{ "history", cmd_history, NULL },   { "rollback", NULL, cmd_rollback }, { "backend", NULL, cmd_backend },
};

/* logFormat and logLevel are live settings: a change takes effect at once. */
static void log_follow_settings(const struct fg_settings *s)
{
	fg_log_configure((enum fg_log_format)s->log_format, (enum fg_log_level)s->log_level);
}

void fg_control_log_change(const char *command, const struct fg_control_peer *who, const char *response,
			   const char *detail)
{
	json_t *r = response ? json_loads(response, 0, NULL) : NULL;
	json_t *res = json_object_get(r, "result");
	bool ok = json_is_true(json_object_get(r, "ok"));
	struct fg_log_field f[10];
	unsigned n = 0;
	f[n++] = FG_LOG_STR("command", command);
	if (who && who->known) {
		f[n++] = FG_LOG_UINT("uid", who->uid);
		f[n++] = FG_LOG_UINT("gid", who->gid);
	} else {
		f[n++] = FG_LOG_STR("peer", who ? "unknown" : "daemon");
	}
	if (detail)
		f[n++] = FG_LOG_STR("object", detail);
	if (ok) {
		f[n++] = FG_LOG_INT("generation", json_integer_value(json_object_get(res, "generation")));
		f[n++] = FG_LOG_INT("objects", json_integer_value(json_object_get(res, "objects")));
		f[n++] = FG_LOG_INT("priorityLevels", json_integer_value(json_object_get(res, "priorityLevels")));
		f[n++] = FG_LOG_INT("flowSchemas", json_integer_value(json_object_get(res, "flowSchemas")));
		f[n++] = FG_LOG_UINT("warnings", json_array_size(json_object_get(res, "warnings")));
		/* No generation in the answer: nothing was published (a dry run). */
		bool published = json_object_get(res, "generation") != NULL;
		fg_log_fields(published ? FG_LOG_INFO : FG_LOG_DEBUG,
			      published ? "configuration changed" : "configuration checked, not applied", f, n);
	} else {
		const char *e = json_string_value(json_object_get(r, "error"));
		json_t *errors = json_object_get(r, "errors"), *l;
		size_t i, len = 0;
		char details[FG_LOG_LINE_MAX / 2] = ""; /* the errors, as many as fit */
		json_array_foreach(errors, i, l) {
			int w = snprintf(details + len, sizeof(details) - len, "%s%s", i ? "; " : "", json_string_value(l));
			if (w < 0 || (size_t)w >= sizeof(details) - len)
				break;
			len += (size_t)w;
		}
		f[n++] = FG_LOG_STR("error", e ? e : "out of memory");
		f[n++] = FG_LOG_UINT("errors", json_array_size(errors));
		if (len)
			f[n++] = FG_LOG_STR("details", details);
		fg_log_fields(FG_LOG_WARN, "configuration change refused", f, n);
	}
	json_decref(r);
}

/* A line from a peer (NULL: a caller without one, e.g. a test). */
static char *handle_line(const struct fg_control_view *view, const uint8_t *line, size_t len, bool may_mutate,
			 const struct fg_control_peer *who)
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
				     "version, pending, dump, history, rollback, backend)", c);
	else if (cmd->change && !may_mutate) {
		/* Any local peer can cause these: bounded, the rest counted (control thread only). */
		static struct fg_log_burst denials = { .window_ns = FG_CONTROL_DENIAL_LOG_WINDOW_NS,
						       .max = FG_CONTROL_DENIAL_LOG_MAX };
		uint64_t suppressed;
		out = error_response("permission denied: %s needs root or a uid/gid in controlAdmins", c);
		if (fg_log_burst_allow(&denials, fg_now_ns(), &suppressed))
			fg_log(FG_LOG_WARN, "permission denied", FG_LOG_STR("command", c),
			       FG_LOG_INT("uid", who && who->known ? (int64_t)who->uid : -1),
			       FG_LOG_INT("gid", who && who->known ? (int64_t)who->gid : -1),
			       FG_LOG_UINT("suppressedBefore", suppressed));
	} else if (!cmd->change) {
		out = cmd->read(view, req);
	} else {
		out = cmd->change(view, req, who && who->known ? (int64_t)who->uid : -1);
		fg_control_log_change(c, who, out, json_string_value(json_object_get(req, "name")));
		log_follow_settings(view->settings);
	}
	json_decref(req);
	return out;
}

char *fg_control_handle_line(const struct fg_control_view *view, const uint8_t *line, size_t len, bool may_mutate)
{
	return handle_line(view, line, len, may_mutate, NULL);
}

char *fg_control_handle_line_as(const struct fg_control_view *view, const uint8_t *line, size_t len, bool may_mutate,
				int64_t uid)
{
	struct fg_control_peer who = { .known = uid >= 0, .uid = (uint32_t)uid, .gid = UINT32_MAX };
	return handle_line(view, line, len, may_mutate, uid >= 0 ? &who : NULL);
}

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
				     ? error_response("busy: %zu bytes of answers wait for slow readers; try again",
						      ctl->queued)
				     : handle_line(&ctl->view, (const uint8_t *)c->buf, line, admin, &c->peer.id);
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
			conn_refuse(ctl, c, error_response("out of memory for the request"), now);
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
		conn_refuse(ctl, c, error_response("request line longer than %u bytes", FG_CONTROL_MAX_MSG), now);
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
				    error_response("idle timeout: no request for %u s; connection closed",
						   FG_CONTROL_IDLE_TIMEOUT_MS / 1000),
				    now);
	} else if (c->len && !conn_has_output(c) && !c->closing &&
		   now - c->partial_ns > FG_CONTROL_READ_TIMEOUT_MS * FG_NS_PER_MS) {
		conn_refuse(ctl, c, error_response("read timeout: incomplete request line"), now);
	}
}

/* Best effort for a connection that gets no slot: one short line into an
 * empty socket buffer does not block. */
static void refuse_unslotted(int fd, const char *fmt, unsigned a, unsigned b)
{
	char *resp = error_response(fmt, a, b);
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
	struct apply_text *texts = calloc(v->n_reload_paths, sizeof(*texts));
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
			count_change(v, false);
			goto out;
		}
		texts[n].data = buf;
	}
	char *resp = apply_texts_ex(v, texts, n, false, false, BASE_LIVE, "SIGHUP reload", -1, &failed);
	fg_control_log_change("reload", NULL, resp, NULL);
	log_follow_settings(v->settings);
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
		poll(pfd, n, FG_LOGWATCH_PERIOD_NS / FG_NS_PER_MS);
		if (pfd[WAKE].revents) {
			fg_logwatch_flush(&ctl->watch, &ctl->view, fg_now_ns()); /* the workers are done by now */
			break;
		}
		uint64_t now = fg_now_ns();
		if (fg_logwatch_poll(&ctl->watch, &ctl->view, now))
			sd_notify(0, "STOPPING=1");
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
