/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workerset — the workers of one dataplane, created and destroyed together:
 * each worker cache-line aligned, initialised on its io lane, joined to the
 * hand-off mesh (several workers), and configured with the first
 * configuration.  The daemon and the dataplane benchmark both build theirs
 * here.
 *
 * Thread contract: create and destroy from one thread while no worker runs.
 */
#ifndef FG_WORKERSET_H
#define FG_WORKERSET_H

#include <stddef.h>

#include "worker.h"

struct fg_workerset {
	unsigned n;
	struct fg_worker **w;    /* n workers */
	struct fg_mesh mesh;     /* with several workers */
	struct fg_io ios[FG_MAX_WORKER_CORES];
};

/* n workers on ios[0..n), max_requests slots each, following cfg from now.
 * 0, or -EINVAL/-ENOMEM with the reason in err; a failed init leaves
 * nothing to free (fini is still safe). */
int fg_workerset_init(struct fg_workerset *ws, unsigned n, const struct fg_io *ios, uint32_t max_requests,
		      const struct fg_config *cfg, uint64_t now, char *err, size_t errlen);

/* Frees the workers and what is left in the rings; safe on a zeroed or
 * partly initialised set. */
void fg_workerset_fini(struct fg_workerset *ws);

/* Whether every worker follows configuration generation gen (acquire). */
bool fg_workerset_all_follow(const struct fg_workerset *ws, uint64_t gen);

#endif
