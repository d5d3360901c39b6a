/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: FlowSchema / PriorityLevelConfiguration / FairSharing
 * documents (JSON or YAML) through validation and, when valid, get of every
 * kind, compilation and classification (a weight in range for every flow,
 * the weighted flag agreeing with it).  A refused input must leave the set unchanged.  The same
 * input through delete -f's reader (kind and name only), which must name
 * every object a valid input applies, and the diff from an empty set, which
 * must call every object created. */
#include <stdlib.h>
#include <string.h>

#include "flowcontrol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fg_fc_set *s = fg_fc_set_new();
	struct fg_settings settings;
	struct fg_errors e, w;
	memset(&e, 0, sizeof(e));
	memset(&w, 0, sizeof(w));
	fg_settings_defaults(&settings);
	/* Strict and lenient field validation alike, by the input's length. */
	struct fg_fc_apply_opts opts = { .strict = size & 1, .warnings = &w };
	struct fg_errors ie = { .len = 0 };
	json_t *ids = fg_fc_document_ids(data, size, &ie);
	int n = fg_fc_set_apply_opts(s, data, size, &settings, &opts, &e);
	if (n < 0) {
		if (fg_fc_set_size(s))
			abort();
	} else {
		if (!ids || json_array_size(ids) != (size_t)n)
			abort();
		struct fg_fc_set *empty = fg_fc_set_new();
		json_t *d = fg_fc_set_diff(empty, s, s, "deleted");
		if (d && json_integer_value(json_object_get(d, "created")) != (json_int_t)fg_fc_set_size(s))
			abort();
		json_decref(d);
		fg_fc_set_free(empty);
		fg_fc_set_warn_dangling(s, &w);
		for (int k = 0; k < FG_FC_N_KINDS; k++)
			json_decref(fg_fc_set_get(s, (enum fg_fc_kind)k, NULL));
		struct fg_fc_config *c = fg_fc_compile(s, 600, &e);
		if (c) {
			struct fg_str g = { "system:authenticated", 20 };
			struct fg_fc_request r = { .user = { "alice", 5 }, .ns = { "ns", 2 }, .verb = { "get", 3 },
						   .api_group = { "", 0 }, .resource = { "pods", 4 },
						   .subresource = { "", 0 }, .groups = &g, .n_groups = 1 };
			/* Users the corpus weighs, and the groups its schemas match. */
			static const char *const users[] = { "alice", "bob", "" };
			static const char *const groups[] = { "system:authenticated", "tenants", "t" };
			for (size_t u = 0; u < 3; u++)
				for (size_t k = 0; k < 3; k++) {
					struct fg_fc_match m;
					r.user = fg_str_of(users[u]);
					g = fg_str_of(groups[k]);
					fg_fc_classify(c, &r, &m);
					if (m.level >= c->n_levels || m.schema >= c->n_schemas || m.weight < 1 ||
					    m.weight > FG_FC_WEIGHT_MAX ||
					    (m.weight != FG_FC_WEIGHT_ONE && !c->levels[m.level].weighted))
						abort();
				}
			fg_fc_config_free(c);
		}
	}
	json_decref(ids);
	fg_fc_set_free(s);
	return 0;
}
