/* SPDX-License-Identifier: Apache-2.0 */
/* workerset — the workers of one dataplane; see workerset.h. */
#include "workerset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "defs.h"

int fg_workerset_init(struct fg_workerset *ws, unsigned n, const struct fg_io *ios, uint32_t max_requests,
		      const struct fg_config *cfg, uint64_t now, char *err, size_t errlen)
{
	memset(ws, 0, sizeof(*ws));
	if (n < 1 || n > FG_MAX_WORKER_CORES) {
		snprintf(err, errlen, "%u workers (1..%u)", n, FG_MAX_WORKER_CORES);
		return -EINVAL;
	}
	memcpy(ws->ios, ios, sizeof(*ios) * n);
	ws->w = calloc(n, sizeof(*ws->w));
	if (!ws->w || (n > 1 && fg_mesh_init(&ws->mesh, n, fg_handoff_ring_capacity(n)))) {
		snprintf(err, errlen, "out of memory for %u workers", n);
		goto err;
	}
	ws->n = n;
	for (unsigned i = 0; i < n; i++) {
		struct fg_worker *w = aligned_alloc(FG_CACHE_LINE, FG_CACHE_ALIGN(sizeof(*w)));
		if (!w) {
			snprintf(err, errlen, "out of memory for worker %u", i);
			goto err;
		}
		memset(w, 0, sizeof(*w));
		ws->w[i] = w;
		int rc = fg_worker_init(w, i, ios[i], max_requests);
		if (rc == -EIO) {
			snprintf(err, errlen, "worker %u: libsodium found no random source for its secrets", i);
			goto err;
		}
		if (!rc && i > 0) /* a cookie any worker made is good at every worker */
			fg_worker_share_cookie_master(w, ws->w[0]->cookies.master);
		if (rc || (n > 1 && fg_worker_join(w, &ws->mesh)) || fg_worker_configure(w, cfg, now)) {
			snprintf(err, errlen, "out of memory for worker %u (%u request slots)", i, max_requests);
			goto err;
		}
	}
	return 0;
err:
	fg_workerset_fini(ws);
	return -ENOMEM;
}

void fg_workerset_fini(struct fg_workerset *ws)
{
	if (ws->mesh.rings)
		fg_mesh_fini(&ws->mesh, ws->ios);
	for (unsigned i = 0; ws->w && i < ws->n; i++) {
		if (ws->w[i] && ws->w[i]->reqs.slots)
			fg_worker_fini(ws->w[i]);
		free(ws->w[i]);
	}
	free(ws->w);
	memset(ws, 0, sizeof(*ws));
}

bool fg_workerset_all_follow(const struct fg_workerset *ws, uint64_t gen)
{
	for (unsigned i = 0; i < ws->n; i++)
		if (__atomic_load_n(&ws->w[i]->stats.config_generation, __ATOMIC_ACQUIRE) != gen)
			return false;
	return true;
}
