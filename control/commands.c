/* SPDX-License-Identifier: Apache-2.0 */
/* commands — the control commands: parse a request line, check rights,
 * run it (status, get, explain, apply and validate, delete, rollback,
 * backend, pending, dump, history), commit a change and answer; see
 * control.h and control_int.h. */
#include "control_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <urcu-qsbr.h>

#include "backendpool.h"
#include "clock.h"
#include "defs.h"
#include "log.h"
#include "settings_table.h"
#include "status.h"

char *fg_control__error(const char *fmt, ...)
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
void fg_control__count_change(const struct fg_control_view *view, bool ok)
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
			fg_control__count_change(view, false);
		return errs.count ? errors_response(&errs) : fg_control__error("out of memory");
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
		fg_control__count_change(view, false);
		return fg_control__error("out of memory");
	}
	fg_control__count_change(view, true);
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
static char *apply_texts_ex(const struct fg_control_view *view, const struct fg_control_text *texts, unsigned n, bool strict,
			    bool dry, enum apply_base base, const char *what, int64_t uid, unsigned *failed)
{
	struct fg_fc_set *candidate = base == BASE_LIVE ? fg_fc_set_share(view->objects) : fg_fc_set_new();
	struct fg_fc_set *input = fg_fc_set_new();
	if (!candidate || !input) {
		fg_fc_set_free(candidate);
		fg_fc_set_free(input);
		return fg_control__error("out of memory");
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
				fg_control__count_change(view, false);
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
		return fg_control__error("out of memory");
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
		return fg_control__error("%s needs \"data\": the objects as JSON or YAML text", dry ? "validate" : "apply");
	json_t *strict = json_object_get(req, "strict"), *prune = json_object_get(req, "prune");
	if (strict && !json_is_boolean(strict))
		return fg_control__error("\"strict\" must be true or false");
	if (prune && !json_is_boolean(prune))
		return fg_control__error("\"prune\" must be true or false");
	bool standalone = dry && json_is_true(json_object_get(req, "standalone"));
	if (standalone && json_is_true(prune))
		return fg_control__error("\"standalone\" and \"prune\" exclude each other");
	struct fg_control_text text = { json_string_value(data), json_string_length(data) };
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
		*err = fg_control__error("\"kind\" must be FlowSchema, PriorityLevelConfiguration or FairSharing "
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
		return fg_control__error("delete needs \"name\"");
	struct fg_fc_set *candidate = fg_fc_set_share(view->objects);
	if (!candidate)
		return fg_control__error("out of memory");
	if (fg_fc_set_delete(candidate, (enum fg_fc_kind)kind, name)) {
		fg_fc_set_free(candidate);
		return fg_control__error("%s \"%s\" not found", fg_fc_kind_name((enum fg_fc_kind)kind), name);
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
		return fg_control__error("backend needs \"action\": enable, drain, disable, add or remove");
	json_t *jaddr = json_object_get(req, "address");
	const char *spec = json_string_value(jaddr);
	if (!spec || json_string_length(jaddr) >= FG_BACKEND_SPEC_MAX)
		return fg_control__error("backend %s needs \"address\": ADDR:PORT%s (at most %u characters)", actions[act],
				      act == ACT_ADD ? "[@MAC][,seats=N]" : "", FG_BACKEND_SPEC_MAX - 1);
	struct fg_settings next = *view->settings;
	struct fg_endpoint ep;
	int at;
	if (act == ACT_ADD) {
		int rc = fg_settings_add_backend(&next, spec);
		if (rc == -ENOSPC)
			return fg_control__error("too many backends (at most %u)", FG_MAX_BACKENDS);
		if (rc)
			return fg_control__error("bad backend \"%.95s\": expected ADDR:PORT[@MAC][,seats=N] (seats 1-%u)",
					      spec, FG_MAX_BACKEND_SEATS);
		ep = next.backends[next.n_backends - 1].ep;
		if (fg_settings_find_backend(view->settings, &ep) >= 0)
			return fg_control__error("backend %.95s is already listed", spec);
	} else {
		if (fg_endpoint_parse(spec, &ep))
			return fg_control__error("bad backend address \"%.95s\": expected ADDR:PORT", spec);
		if ((at = fg_settings_find_backend(&next, &ep)) < 0)
			return fg_control__error("no backend %.95s (status lists them)", spec);
		if (act == ACT_REMOVE) /* the others keep their order (get, --help-settings) */
			memmove(&next.backends[at], &next.backends[at + 1],
				sizeof(next.backends[0]) * (--next.n_backends - (uint32_t)at));
		else
			next.backends[at].admin = (uint8_t)act;
	}
	struct fg_fc_set *candidate = fg_fc_set_share(view->objects);
	if (!candidate)
		return fg_control__error("out of memory");
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
		return fg_control__error("%s \"%s\" not found", fg_fc_kind_name((enum fg_fc_kind)kind), name);
	return ok_response(json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List", "items", items));
}

static char *cmd_explain(const struct fg_control_view *view, json_t *req)
{
	struct fg_fc_request r;
	struct fg_str *groups;
	char msg[160];
	if (fg_fc_request_from_json_alloc(json_object_get(req, "request"), &r, &groups, msg, sizeof(msg)))
		return fg_control__error("%s", msg);
	json_t *why = json_object_get(req, "why");
	if (why && !json_is_boolean(why)) {
		free(groups);
		return fg_control__error("\"why\" must be true or false");
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
		out = fg_control__error("%.*s", msg ? 400 : (int)strcspn(a->body, "\n"), msg ? msg : a->body);
		json_decref(doc);
	} else {
		json_t *doc = json ? json_loadb(a->body, a->len, 0, NULL) : json_pack("{s:s%}", "table", a->body, a->len);
		out = doc ? ok_response(doc) : fg_control__error("cannot encode the answer");
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
		return fg_control__error("pending requests are not available (no snapshot boxes)");
	if (!level)
		return fg_control__error("pending needs \"level\"");
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
			return fg_control__error("\"%s\" has the wrong type", params[i]);
		}
	}
	struct fg_pending_query q;
	char err[160];
	if (fg_pending_parse_query(kv, n, &q, err, sizeof(err)))
		return fg_control__error("%s", err);
	struct fg_vis_answer a;
	fg_vis_pending(view->vis, level, &q, &a);
	return a.body ? vis_response(&a, true) : fg_control__error("out of memory");
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
		return fg_control__error("dumps are not available (no snapshot boxes)");
	if (!w || i == 3)
		return fg_control__error("dump needs \"what\": levels, queues or requests");
	if (format && strcmp(format, "table") && strcmp(format, "json"))
		return fg_control__error("\"format\" must be table or json");
	bool json = format && !strcmp(format, "json");
	struct fg_vis_answer a;
	fg_vis_dump(view->vis, (enum fg_vis_dump)i, json_is_true(json_object_get(req, "details")), json, &a);
	return a.body ? vis_response(&a, json) : fg_control__error("out of memory");
}

/* delete with "data": every object the text names, as `kubectl delete -f`:
 * those in force go in one change (mandatory ones come back as their
 * built-in copies), the others are listed as not found. */
static char *cmd_delete_data(const struct fg_control_view *view, json_t *req, int64_t uid)
{
	json_t *data = json_object_get(req, "data");
	if (!json_is_string(data))
		return fg_control__error("delete needs \"data\": the objects as JSON or YAML text (or \"kind\" and \"name\")");
	struct fg_errors errs = { .len = 0 }, warnings = { .len = 0 };
	json_t *ids = fg_fc_document_ids((const uint8_t *)json_string_value(data), json_string_length(data), &errs);
	if (!ids)
		return errs.count ? errors_response(&errs) : fg_control__error("out of memory");
	struct fg_fc_set *candidate = fg_fc_set_share(view->objects);
	json_t *not_found = json_array(), *restored = json_array(), *id;
	if (!candidate || !not_found || !restored) {
		fg_fc_set_free(candidate);
		json_decref(ids);
		json_decref(not_found);
		json_decref(restored);
		return fg_control__error("out of memory");
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
		return settings ? ok_response(settings) : fg_control__error("out of memory");
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
		return fg_control__error("no configuration history is kept here");
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
		return fg_control__error("no configuration history is kept here");
	json_t *to = json_object_get(req, "to");
	if (to && (!json_is_integer(to) || json_integer_value(to) < 1))
		return fg_control__error("\"to\" must be a generation number (fairgatectl history lists them)");
	rcu_thread_online();
	uint64_t gen = rcu_dereference(*view->config_ptr)->generation;
	rcu_thread_offline();
	const struct fg_history_entry *e = to ? fg_history_find(view->history, (uint64_t)json_integer_value(to))
					      : fg_history_before(view->history, gen);
	if (!e && to)
		return fg_control__error("generation %lld is not kept (configHistory %u; fairgatectl history lists those kept)",
				      (long long)json_integer_value(to), view->settings->config_history);
	if (!e)
		return fg_control__error("no generation before %llu is kept to roll back to", (unsigned long long)gen);
	struct fg_fc_set *candidate = fg_fc_set_share(e->objects);
	if (!candidate)
		return fg_control__error("out of memory");
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
void fg_control__follow_log_settings(const struct fg_settings *s)
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
char *fg_control__handle(const struct fg_control_view *view, const uint8_t *line, size_t len, bool may_mutate,
			 const struct fg_control_peer *who)
{
	json_error_t jerr;
	json_t *req = json_loadb((const char *)line, len, 0, &jerr);
	if (!req)
		return fg_control__error("malformed JSON at column %d: %s", jerr.column, jerr.text);
	char *out = NULL;
	const char *c = json_string_value(json_object_get(req, "command"));
	const struct command *cmd = NULL;
	for (size_t i = 0; c && i < sizeof(commands) / sizeof(commands[0]) && !cmd; i++)
		if (!strcmp(c, commands[i].name))
			cmd = &commands[i];
	if (!json_is_object(req) || !c)
		out = fg_control__error("request must be an object with a string \"command\"");
	else if (!cmd)
		out = fg_control__error("unknown command \"%.64s\" (known: apply, delete, get, validate, explain, status, "
				     "version, pending, dump, history, rollback, backend)", c);
	else if (cmd->change && !may_mutate) {
		/* Any local peer can cause these: bounded, the rest counted (control thread only). */
		static struct fg_log_burst denials = { .window_ns = FG_CONTROL_DENIAL_LOG_WINDOW_NS,
						       .max = FG_CONTROL_DENIAL_LOG_MAX };
		uint64_t suppressed;
		out = fg_control__error("permission denied: %s needs root or a uid/gid in controlAdmins", c);
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
		fg_control__follow_log_settings(view->settings);
	}
	json_decref(req);
	return out;
}

char *fg_control_handle_line(const struct fg_control_view *view, const uint8_t *line, size_t len, bool may_mutate)
{
	return fg_control__handle(view, line, len, may_mutate, NULL);
}

char *fg_control_handle_line_as(const struct fg_control_view *view, const uint8_t *line, size_t len, bool may_mutate,
				int64_t uid)
{
	struct fg_control_peer who = { .known = uid >= 0, .uid = (uint32_t)uid, .gid = UINT32_MAX };
	return fg_control__handle(view, line, len, may_mutate, uid >= 0 ? &who : NULL);
}

char *fg_control__reload(const struct fg_control_view *view, const struct fg_control_text *texts, unsigned n,
			 unsigned *failed)
{
	return apply_texts_ex(view, texts, n, false, false, BASE_LIVE, "SIGHUP reload", -1, failed);
}
