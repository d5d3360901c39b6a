/* SPDX-License-Identifier: Apache-2.0 */
/* Fault injection in DPDK mode: the real mbuf pool runs dry while requests
 * execute.  The backend-timeout answers fairgate owes come from the worker's
 * reserve; past it they are counted lost, never as sent.  Runs the EAL with
 * --no-huge and a net_null port (nothing leaves the process). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "dpdk_io.h"
#include "flowcontrol.h"
#include "test.h"
#include "worker.h"

#define N_REQUESTS (FG_ANSWER_RESERVE + 16)
#define S 1000000000ull

TEST(owed_answers_survive_a_dry_mempool)
{
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "--file-prefix=fgpool%d", (int)getpid());
	char *eal[] = { "test_dpdk_pool", "--no-huge", "-m", "512", "--no-pci", "--no-shconf", prefix, "-l", "0",
			"--vdev=net_null0", "--log-level=lib.eal:error", NULL };
	struct fg_settings s;
	fg_settings_defaults(&s);
	s.io = FG_IO_DPDK;
	fg_endpoint_parse("192.0.2.2:7400", &s.listen);
	CHECK_EQ(fg_settings_add_backend(&s, "192.0.2.1:7501@02:00:00:00:00:01"), 0);
	fg_cidr_parse("0.0.0.0/0", &s.trusted[0]); /* the identities below are believed */
	s.n_trusted = 1;
	char err[256];
	struct fg_dpdk_io *d = fg_dpdk_io_create(11, eal, &s, 256, 1, err, sizeof(err));
	if (!d) {
		fprintf(stderr, "  no DPDK here: %s\n", err);
		CHECK(d != NULL);
		return;
	}
	struct fg_fc_set *set = fg_fc_set_bootstrap();
	struct fg_errors e = { .len = 0 };
	struct fg_config *cfg = fg_config_build(&s, fg_fc_compile(set, s.seat_limit, &e), 1);
	fg_fc_set_free(set);
	struct fg_io io = fg_dpdk_io_as_io(d);
	struct fg_worker *w = calloc(1, sizeof(*w));
	CHECK_EQ(fg_worker_init(w, 0, io, 256), 0);
	uint64_t now = 1 * S;
	CHECK_EQ(fg_worker_configure(w, cfg, now), 0);

	/* Exempt requests (system:masters): all execute at once. */
	struct fg_endpoint client;
	fg_endpoint_parse("192.0.2.9:5000", &client);
	memcpy(client.mac, "\x02\x00\x00\x00\x00\x09", 6);
	for (uint64_t id = 1; id <= N_REQUESTS; id++) {
		struct fg_pkt p;
		CHECK_EQ(io.ops->alloc(io.ctx, &p), 0);
		struct fg_msg m;
		memset(&m, 0, sizeof(m));
		m.hdr.type = FG_MSG_REQUEST;
		m.hdr.request_id = id;
		m.user = fg_str_of("admin");
		m.groups[m.n_groups++] = fg_str_of("system:masters");
		m.verb = fg_str_of("get");
		p.len = (uint32_t)fg_proto_encode(p.data, p.cap, &m);
		p.peer = client;
		fg_worker_handle(w, cfg, &p, now);
	}
	fg_worker_poll(w, cfg, now); /* dispatch and send to the backend (net_null takes them) */
	CHECK_EQ(w->stats.executing, N_REQUESTS);
	CHECK_EQ(w->n_reserve, FG_ANSWER_RESERVE);

	/* Take every mbuf left in the pool. */
	static struct fg_pkt hoard[1 << 16];
	unsigned n_hoard = 0;
	while (n_hoard < sizeof(hoard) / sizeof(hoard[0]) && !io.ops->alloc(io.ctx, &hoard[n_hoard]))
		n_hoard++;
	CHECK(n_hoard > 0 && n_hoard < sizeof(hoard) / sizeof(hoard[0]));

	now += cfg->backend_timeout_ns + 1;
	fg_worker_expire(w, cfg, now); /* every request times out; the pool is dry */
	CHECK_EQ(w->stats.rejected[FG_REJECT_BACKEND_TIMEOUT], FG_ANSWER_RESERVE);
	CHECK_EQ(w->stats.answers_lost, N_REQUESTS - FG_ANSWER_RESERVE);
	CHECK_EQ(w->stats.executing, 0);
	uint64_t rej = 0;
	for (int r = 0; r < FG_REJECT__COUNT; r++)
		rej += w->stats.rejected[r];
	CHECK_EQ(w->stats.received, w->stats.responded + rej + w->stats.answers_lost);

	while (n_hoard)
		io.ops->free(io.ctx, &hoard[--n_hoard]);
	fg_worker_poll(w, cfg, now); /* sends what was answered, refills the reserve */
	CHECK_EQ(w->n_reserve, FG_ANSWER_RESERVE);
	fg_worker_fini(w);
	free(w);
	fg_config_free(cfg);
	fg_dpdk_io_free(d);
}

TEST_MAIN
