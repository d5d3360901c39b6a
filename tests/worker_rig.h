/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker_rig — what the worker's unit tests (tests/test_worker*.c) share:
 * a rig of one worker and a mesh of several on a fake io (fake_io.h) and a
 * virtual clock, their configurations built by fg_config_build from the
 * daemon's default settings (a new configuration field gets its default
 * without a rig naming it), the datagrams a client and a backend send, and
 * the accounting checks the tests end with.  Compiled into each of them
 * (worker_rig.c).
 */
#ifndef FG_WORKER_RIG_H
#define FG_WORKER_RIG_H

#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "config.h"
#include "fake_io.h"
#include "flowcontrol.h"
#include "settings.h"
#include "worker.h"

#define MS 1000000ull

/* --- one worker ------------------------------------------------------------- */

struct rig {
	struct fake_io io;
	struct fg_worker w;
	struct fg_settings s;      /* what cfg was built from (rig_init, rig_set_fc) */
	struct fg_config *cfg;     /* the configuration the worker follows; tests change it in place */
	struct fg_config *old[8];  /* the ones rig_set_fc replaced: freed by rig_fini */
	unsigned n_old;
	struct fg_endpoint client[4], backend[2];
	uint64_t now;
	unsigned seen; /* sent datagrams already inspected */
};

/* One level "pl" (`queues` queues, hand 1: a flow always lands in the same
 * queue) that every request reaches, its limit set to `seats`; one_level:
 * 64 queues. */
struct fg_fc_config *one_level_queues(uint32_t seats, uint32_t qlen, uint32_t queues);
struct fg_fc_config *one_level(uint32_t seats, uint32_t qlen);
/* Level "pl"'s queue set in w, or NULL. */
struct fg_queueset *pl_qs(struct fg_worker *w);

/* Worker 3 with `seats` seats in one_level(seats, qlen), 1 s queue wait, 5 s
 * backend timeout, retry-after 250 ms, ejection after 3 timeouts (1 s, at most
 * 30 s) and the first n_backends of backend[]; configured at now = 1 s. */
void rig_init(struct rig *r, uint32_t seats, uint32_t qlen, unsigned n_backends);
/* Other objects: a new configuration from the rig's settings with fc (owned
 * from here) and the next generation, followed at the next step. */
void rig_set_fc(struct rig *r, struct fg_fc_config *fc);
/* Tear down; every buffer must have come back. */
void rig_fini(struct rig *r);

/* A REQUEST from `from` (payload "body"), as a client sends it. */
void inject_request(struct fake_io *io, struct fg_endpoint from, uint64_t id, const char *user, uint16_t seats);
/* A backend's RESPONSE to a dispatch id. */
void inject_response(struct fake_io *io, struct fg_endpoint from, uint64_t dispatch_id, const char *body);
void send_request(struct rig *r, int client, uint64_t id, const char *user, uint16_t seats);
void respond_from(struct rig *r, int backend, uint64_t dispatch_id, const char *body);
/* Backend `backend` answers dispatch_id with a REJECT of its own. */
void inject_backend_reject(struct fake_io *io, struct fg_endpoint from, uint64_t dispatch_id,
			   enum fg_reject_reason reason);
void reject_from(struct rig *r, int backend, uint64_t dispatch_id, enum fg_reject_reason reason);
/* One poll at r->now. */
void step(struct rig *r);
/* The next datagram the worker sent, decoded: 1, or 0 when there is none
 * (or it does not decode). */
int next_sent(struct rig *r, struct fg_msg *m, struct fg_endpoint *to);

/* The per-(level, schema) figures (apfstats.h) agree with the worker's
 * totals: every classified request is estimated once and ends its wait once
 * (dispatched, or rejected), gauges match the lists, seats the queue sets'. */
void check_apf(struct fg_worker *w);
/* Every request received is answered, lost, waiting or executing. */
void check_invariant(struct rig *r);
/* Shut the worker down (everything still owed is answered), count the last
 * answers, and return how many requests 1..next_id-1 did not get exactly one. */
unsigned shut_down_and_count_bad_answers(struct rig *r, uint8_t *answers, uint64_t next_id);

/* --- several workers (one thread drives them, so each step is exact) ---------- */

#define MESH_MAX 4

struct mesh_rig {
	struct fake_io io;            /* one pool and one wire for all workers */
	struct fg_mesh mesh;
	struct fg_worker w[MESH_MAX];
	unsigned n;
	struct fg_config *cfgs[64];   /* every generation published so far */
	unsigned n_cfgs;
	unsigned follows[MESH_MAX];   /* index into cfgs each worker follows */
	struct fg_endpoint client[4], backend[2];
	uint64_t now;
	unsigned seen;
};

/* n workers following one_level(seats, 50) with both backends (ejection
 * after 1000 timeouts: never, here). */
void mesh_init(struct mesh_rig *r, unsigned n, uint32_t seats);
void mesh_fini(struct mesh_rig *r);
/* Publish the next generation (no worker follows it yet): `seats` seats in
 * one_level(seats, qlen), or in fc (owned from here). */
struct fg_config *mesh_config(struct mesh_rig *r, uint32_t seats, uint32_t qlen);
struct fg_config *mesh_config_fc(struct mesh_rig *r, uint32_t seats, struct fg_fc_config *fc);
/* Worker i polls the configuration it follows. */
void mesh_step(struct mesh_rig *r, unsigned i);
/* Request id from client id % 4. */
void mesh_send(struct mesh_rig *r, uint64_t id, const char *user, uint16_t seats);
void mesh_respond(struct mesh_rig *r, int backend, uint64_t dispatch_id);
/* Note every request the workers sent to a backend, to answer it later. */
void mesh_collect(struct mesh_rig *r, uint64_t *ids, uint8_t *backends, unsigned *n, unsigned cap);
/* Sum a uint64_t counter at `offset` in struct fg_worker_stats over the workers. */
uint64_t mesh_sum(struct mesh_rig *r, size_t offset);
/* A 64-bit counter only: a narrower field makes the array size negative. */
#define MESH_SUM(r, field) \
	((void)sizeof(char[sizeof(((struct fg_worker_stats *)0)->field) == 8 ? 1 : -1]), \
	 mesh_sum(r, offsetof(struct fg_worker_stats, field)))
uint32_t mesh_waiting(struct mesh_rig *r);
uint32_t mesh_seats_in_use(struct mesh_rig *r);

#endif
