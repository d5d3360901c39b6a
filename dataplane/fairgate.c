/*
 * fairgate — the daemon: settings, I/O mode, the worker loop, the control
 * thread, clean shutdown.  docs/operations.md describes the flags.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <urcu-qsbr.h>

#include <rte_launch.h>
#include <rte_lcore.h>

#include "clock.h"
#include "control.h"
#include "defs.h"
#include "dpdk_io.h"
#include "flowcontrol.h"
#include "duration.h"
#include "shuffle.h"
#include "settings.h"
#include "sock_io.h"
#include "worker.h"

static volatile sig_atomic_t stop_signal;
static volatile int shutting_down;
static struct fg_config *published_config;

/* Several workers (DPDK mode): each on its own lcore, joined by a mesh of
 * hand-off rings; the allotter thread splits seats between them. */
static struct fg_worker **workers;
static unsigned n_workers = 1;
static unsigned workers_done; /* workers past their own drain */
static volatile int allotter_stop;
static struct fg_allotter_stats allotter_stats;
static const struct fg_settings *worker_settings;

static void on_signal(int sig) { stop_signal = sig; }

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fairgate [options] [-- EAL args]\n"
		"\n"
		"A priority-and-fairness request dispatcher (KEP-1040) for UDP request traffic.\n"
		"Settings come from the defaults, then --config, then the flags below.\n"
		"\n"
		"  --config FILE            FairgateSettings, FlowSchema and PriorityLevelConfiguration\n"
		"                           objects, JSON or YAML (docs/configuration.md); without\n"
		"                           FlowSchemas/levels the Kubernetes bootstrap set is used\n"
		"  --io socket|dpdk         I/O mode (default socket)\n"
		"  --listen ADDR:PORT       where clients send requests (default %s)\n"
		"  --backend ADDR:PORT[@MAC][,seats=N]  a backend (seats: its capacity); repeat for several\n"
		"  --control-socket PATH    control socket (default %s)\n"
		"  --seat-limit N           serverConcurrencyLimit in seats (default %u)\n"

		"  --queue-wait DURATION    longest wait before REJECT time-out (default 15s)\n"
		"  --backend-timeout DURATION  longest execution before REJECT backend-timeout (default 30s)\n"
		"  --shutdown-grace DURATION   wait for executing requests on SIGTERM (default 5s)\n"
		"  --retry-after-ms N       retry-after hint in REJECTs (default %u)\n"
		"  --max-requests N         request slots per worker (default %u)\n"
		"  --workers N              worker cores (DPDK mode; EAL must give N lcores, e.g. -l 0-1)\n"
		"  --allotment-period DURATION  how often seats are re-split between workers (default 1ms)\n"
		"  --check                  validate the settings, print them, exit\n"
		"  --help, --version\n"
		"\n"
		"DPDK mode: EAL arguments follow '--', e.g.\n"
		"  fairgate --io dpdk --listen 192.0.2.2:7400 -- --no-huge -m 512 --no-pci \\\n"
		"      --no-shconf --file-prefix=fg1 --vdev=net_tap0,iface=fgtap0\n"
		"Exit status: 0 clean shutdown, 1 runtime failure, 2 bad settings.\n",
		FG_DEFAULT_LISTEN, FG_DEFAULT_CONTROL_SOCKET, FG_DEFAULT_SEAT_LIMIT, FG_DEFAULT_RETRY_AFTER_MS, FG_DEFAULT_MAX_REQUESTS);
}

static int read_file(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	size_t cap = 4096, n = 0;
	uint8_t *b = malloc(cap);
	size_t r;
	while (b && (r = fread(b + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			if (cap >= (16u << 20)) { /* settings files are small */
				free(b);
				fclose(f);
				return -EFBIG;
			}
			uint8_t *nb = realloc(b, cap *= 2);
			if (!nb)
				free(b);
			b = nb;
		}
	}
	fclose(f);
	if (!b)
		return -ENOMEM;
	*buf = b;
	*len = n;
	return 0;
}

static int parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || end == s || *s == '-' || v < lo || v > hi)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int parse_dur(const char *s, int64_t *out)
{
	int64_t ns;
	if (fg_duration_parse(s, strlen(s), &ns) || ns < 0)
		return -EINVAL;
	*out = ns;
	return 0;
}

enum { OPT_CONFIG = 256, OPT_IO, OPT_LISTEN, OPT_BACKEND, OPT_CONTROL, OPT_SEATS,
       OPT_QWAIT, OPT_BTIMEOUT, OPT_GRACE, OPT_RETRY, OPT_MAXREQ, OPT_CHECK, OPT_HELP, OPT_VERSION,
       OPT_WORKERS, OPT_ALLOT };

static const struct option long_opts[] = {
	{ "config", required_argument, 0, OPT_CONFIG }, { "io", required_argument, 0, OPT_IO },
	{ "listen", required_argument, 0, OPT_LISTEN }, { "backend", required_argument, 0, OPT_BACKEND },
	{ "control-socket", required_argument, 0, OPT_CONTROL }, { "seat-limit", required_argument, 0, OPT_SEATS },
	{ "queue-wait", required_argument, 0, OPT_QWAIT },
	{ "backend-timeout", required_argument, 0, OPT_BTIMEOUT },
	{ "shutdown-grace", required_argument, 0, OPT_GRACE }, { "retry-after-ms", required_argument, 0, OPT_RETRY },
	{ "max-requests", required_argument, 0, OPT_MAXREQ }, { "check", no_argument, 0, OPT_CHECK },
	{ "help", no_argument, 0, OPT_HELP }, { "version", no_argument, 0, OPT_VERSION },
	{ "workers", required_argument, 0, OPT_WORKERS }, { "allotment-period", required_argument, 0, OPT_ALLOT },
	{ 0, 0, 0, 0 },
};

/* Objects from --config: FlowSchemas and levels (the settings go to *s). */
static struct fg_fc_set *file_objects;

/* Two passes: --config first (so flags override the file), then the flags. */
static int load_settings(int argc, char **argv, struct fg_settings *s, int *check_only)
{
	file_objects = fg_fc_set_new();
	struct fg_errors errs = { .len = 0 };
	fg_settings_defaults(s);
	int opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		if (opt != OPT_CONFIG)
			continue;
		uint8_t *buf = NULL;
		size_t len = 0;
		int rc = read_file(optarg, &buf, &len);
		if (rc) {
			fprintf(stderr, "fairgate: --config %s: %s\n", optarg, strerror(-rc));
			return 2;
		}
		rc = fg_fc_set_apply(file_objects, buf, len, s, &errs);
		free(buf);
		if (rc < 0) {
			fprintf(stderr, "fairgate: %s: %u error(s):\n%s", optarg, errs.count, errs.text);
			return 2;
		}
	}
	int backends_from_flags = 0;
	optind = 1;
	opterr = 1;
	while ((opt = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		int bad = 0;
		switch (opt) {
		case OPT_CONFIG: break;
		case OPT_IO:
			if (!strcmp(optarg, "socket")) s->io = FG_IO_SOCKET;
			else if (!strcmp(optarg, "dpdk")) s->io = FG_IO_DPDK;
			else bad = 1;
			break;
		case OPT_LISTEN: bad = fg_endpoint_parse(optarg, &s->listen) != 0; break;
		case OPT_BACKEND:
			if (!backends_from_flags++)
				s->n_backends = 0; /* flags replace the file's list */
			bad = fg_settings_add_backend(s, optarg) != 0;
			break;
		case OPT_CONTROL:
			bad = strlen(optarg) == 0 || strlen(optarg) >= sizeof(s->control_socket);
			if (!bad)
				snprintf(s->control_socket, sizeof(s->control_socket), "%s", optarg);
			break;
		case OPT_SEATS: bad = parse_u32(optarg, 1, FG_MAX_SEAT_LIMIT, &s->seat_limit) != 0; break;
		case OPT_MAXREQ: bad = parse_u32(optarg, 1, FG_MAX_MAX_REQUESTS, &s->max_requests) != 0; break;
		case OPT_RETRY: bad = parse_u32(optarg, 0, 3600000, &s->retry_after_ms) != 0; break;
		case OPT_QWAIT: bad = parse_dur(optarg, &s->queue_wait_ns) != 0; break;
		case OPT_BTIMEOUT: bad = parse_dur(optarg, &s->backend_timeout_ns) != 0 || s->backend_timeout_ns < 1000000; break;
		case OPT_GRACE: bad = parse_dur(optarg, &s->shutdown_grace_ns) != 0; break;
		case OPT_WORKERS: bad = parse_u32(optarg, 1, FG_MAX_WORKER_CORES, &s->workers) != 0; break;
		case OPT_ALLOT: bad = parse_dur(optarg, &s->allotment_period_ns) != 0 ||
				      s->allotment_period_ns < (int64_t)FG_MIN_ALLOTMENT_PERIOD_NS; break;
		case OPT_CHECK: *check_only = 1; break;
		case OPT_HELP: usage(stdout); exit(0);
		case OPT_VERSION: printf("fairgate %s (protocol 1)\n", FG_VERSION); exit(0);
		default: usage(stderr); return 2;
		}
		if (bad) {
			fprintf(stderr, "fairgate: invalid value for --%s: \"%s\"%s\n", long_opts[opt - OPT_CONFIG].name, optarg,
				opt == OPT_BACKEND ? " (want IPv4:PORT[@aa:bb:cc:dd:ee:ff][,seats=N], N 1..1000000)" : "");
			return 2;
		}
	}
	if (fg_settings_validate(s, &errs)) {
		fprintf(stderr, "fairgate: invalid settings, %u error(s):\n%s", errs.count, errs.text);
		return 2;
	}
	return 0;
}

static void print_settings(const struct fg_settings *s)
{
	char ep[32], d1[32], d2[32], d3[32];
	char d4[32];
	printf("io: %s\nworkers: %u\nallotmentPeriod: %s\nlisten: %s\ncontrolSocket: %s\nserverConcurrencyLimit: %u\n"
	       "queueWaitLimit: %s\nbackendTimeout: %s\nshutdownGrace: %s\nretryAfterMillis: %u\nmaxRequests: %u\nbackends:\n",
	       s->io == FG_IO_DPDK ? "dpdk" : "socket", s->workers, fg_duration_format(s->allotment_period_ns, d4, sizeof(d4)),
	       fg_endpoint_format(&s->listen, ep, sizeof(ep)),
	       s->control_socket, s->seat_limit,
	       fg_duration_format(s->queue_wait_ns, d1, sizeof(d1)), fg_duration_format(s->backend_timeout_ns, d2, sizeof(d2)),
	       fg_duration_format(s->shutdown_grace_ns, d3, sizeof(d3)), s->retry_after_ms, s->max_requests);
	for (uint32_t i = 0; i < s->n_backends; i++) {
		printf("  - %s", fg_endpoint_format(&s->backends[i].ep, ep, sizeof(ep)));
		if (s->backends[i].seats)
			printf(",seats=%u", s->backends[i].seats);
		printf("\n");
	}
}

static void print_levels(const struct fg_fc_config *fc)
{
	printf("priorityLevels:\n");
	for (uint32_t i = 0; i < fc->n_levels; i++) {
		const struct fg_fc_level *l = &fc->levels[i];
		printf("  - %s: %s, nominal %u seats (min %u, max %u)", l->name,
		       l->exempt ? "Exempt" : l->reject ? "Limited/Reject" : "Limited/Queue", l->nominal, l->min, l->max);
		if (l->queues)
			printf(", %u queues, hand %u, %u per queue, at most %u seats a request", l->queues, l->hand_size,
			       l->queue_length_limit, l->max_seats);
		printf("\n");
	}
	printf("flowSchemas (matching order):");
	for (uint32_t i = 0; i < fc->n_schemas; i++)
		printf(" %s", fc->schema_names[i]);
	printf("\n");
}

/* The worker loop: runs until a signal, then drains within the grace period.
 * With several workers, a worker past its drain keeps taking what the others
 * hand over (and answers it shutting-down) until all are past theirs. */
static void run_worker(struct fg_worker *w, const struct fg_settings *s)
{
	uint64_t drain_deadline = 0;
	for (;;) {
		rcu_quiescent_state();
		const struct fg_config *cfg = rcu_dereference(published_config);
		uint64_t now = fg_now_ns();
		if (stop_signal && !w->draining) {
			shutting_down = 1;
			drain_deadline = now + (uint64_t)s->shutdown_grace_ns;
			fg_worker_drain(w, cfg, now);
		}
		unsigned n = fg_worker_poll(w, cfg, now);
		if (w->id == 0) /* the pool is shared: one worker reports it */
			FG_STAT_SET(w->stats.buffers_in_use, w->io.ops->in_use(w->io.ctx));
		if (w->draining && (w->executing.count == 0 || now >= drain_deadline)) {
			fg_worker_abort_executing(w, cfg, now);
			break;
		}
		if (n == 0 && w->io.ops->wait) {
			uint64_t next = fg_worker_next_deadline(w);
			uint64_t sleep = next > now ? next - now : 0;
			if (sleep > FG_IDLE_WAIT_NS)
				sleep = FG_IDLE_WAIT_NS;
			rcu_thread_offline();
			w->io.ops->wait(w->io.ctx, sleep);
			rcu_thread_online();
		}
	}
	if (n_workers == 1)
		return;
	__atomic_add_fetch(&workers_done, 1, __ATOMIC_ACQ_REL);
	/* Nothing is pushed after a worker counts itself done (it stops
	 * receiving), so one last pass after everyone is done empties the rings. */
	for (int last = 0;;) {
		rcu_quiescent_state();
		const struct fg_config *cfg = rcu_dereference(published_config);
		fg_worker_poll_handoffs(w, cfg, fg_now_ns());
		if (last)
			break;
		last = __atomic_load_n(&workers_done, __ATOMIC_ACQUIRE) == n_workers;
	}
}

/* A worker lcore other than the main one. */
static int worker_lcore_main(void *arg)
{
	struct fg_worker *w = arg;
	rcu_register_thread();
	run_worker(w, worker_settings);
	rcu_unregister_thread();
	return 0;
}

/* The allotter: every allotment period, or sooner when a worker signals
 * that a request waits for want of allotted seats, and once all workers
 * follow the newest configuration, re-split each level's seats
 * (common/seatshare.h).  Workers only store a flag; the allotter looks at it
 * every FG_ALLOT_SIGNAL_POLL_NS. */
static void *allotter_main(void *arg)
{
	(void)arg;
	rcu_register_thread();
	uint64_t next_round = 0;
	while (!__atomic_load_n(&allotter_stop, __ATOMIC_ACQUIRE)) {
		const struct fg_config *cfg = rcu_dereference(published_config);
		uint64_t now = fg_now_ns();
		/* Taken on every round, so a signal raised before a periodic round
		 * does not cause a second one right after it. */
		bool due = now >= next_round, signal = cfg->board && fg_board_take_signal(cfg->board);
		bool signalled = signal && !due;
		if (cfg->board && (due || signal)) {
			bool all = true;
			for (unsigned i = 0; all && i < n_workers; i++)
				all = __atomic_load_n(&workers[i]->stats.config_generation, __ATOMIC_ACQUIRE) ==
				      cfg->generation;
			if (all) {
				unsigned grants = fg_board_allot(cfg->board);
				FG_STAT_ADD(allotter_stats.rounds, 1);
				FG_STAT_ADD(allotter_stats.signalled_rounds, signalled);
				FG_STAT_ADD(allotter_stats.grants, grants);
			}
			next_round = now + cfg->allotment_period_ns;
		}
		uint64_t nap = cfg->allotment_period_ns < FG_ALLOT_SIGNAL_POLL_NS ? cfg->allotment_period_ns
										   : FG_ALLOT_SIGNAL_POLL_NS;
		rcu_thread_offline();
		struct timespec ts = { 0, (long)nap };
		nanosleep(&ts, NULL);
		rcu_thread_online();
	}
	rcu_unregister_thread();
	return NULL;
}

int main(int argc, char **argv)
{
	/* EAL arguments are whatever follows "--". */
	int own_argc = argc;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			own_argc = i;
			break;
		}
	struct fg_settings s;
	int check_only = 0;
	int rc = load_settings(own_argc, argv, &s, &check_only);
	if (rc)
		return rc;
	/* A file with FlowSchemas or levels replaces the bootstrap set; the
	 * mandatory objects are always there. */
	struct fg_fc_set *objects = fg_fc_set_size(file_objects) ? file_objects : fg_fc_set_bootstrap();
	if (objects != file_objects)
		fg_fc_set_free(file_objects);
	struct fg_errors errs = { .len = 0 };
	struct fg_fc_config *fc = fg_fc_compile(objects, s.seat_limit, &errs);
	if (!fc) {
		fprintf(stderr, "fairgate: invalid configuration, %u error(s):\n%s", errs.count, errs.text);
		return 2;
	}
	if (check_only) {
		print_settings(&s);
		print_levels(fc);
		fg_fc_config_free(fc);
		fg_fc_set_free(objects);
		return 0;
	}
	if (s.n_backends == 0)
		fprintf(stderr, "fairgate: warning: no backends configured; every request gets REJECT no-backend\n");

	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct fg_io ios[FG_MAX_WORKER_CORES];
	struct fg_sock_io *sio = NULL;
	struct fg_dpdk_io *dio = NULL;
	struct fg_control *ctl = NULL;
	struct fg_mesh mesh = { 0 };
	struct fg_worker_stats *stats[FG_MAX_WORKER_CORES];
	pthread_t allotter;
	bool allotter_running = false, lcores_launched = false;
	char errbuf[256], ep[32];
	int err = 0;
	rc = 1;
	n_workers = s.workers;
	worker_settings = &s;
	/* Waiting requests hold their datagram: one buffer per request slot. */
	uint32_t n_buffers = s.max_requests + FG_RX_BURST * 4;
	if (s.io == FG_IO_DPDK) {
		argv[own_argc] = argv[0]; /* EAL wants a program name first */
		dio = fg_dpdk_io_create(argc - own_argc, argv + own_argc, &s, n_buffers, n_workers, errbuf, sizeof(errbuf));
		if (!dio) {
			fprintf(stderr, "fairgate: DPDK: %s\n", errbuf);
			fg_fc_config_free(fc);
			fg_fc_set_free(objects);
			return 1;
		}
		if (rte_lcore_count() < n_workers) {
			fprintf(stderr, "fairgate: --workers %u needs %u DPDK lcores; EAL has %u (give e.g. -l 0-%u or "
				"--lcores)\n", n_workers, n_workers, rte_lcore_count(), n_workers - 1);
			fg_dpdk_io_free(dio);
			fg_fc_config_free(fc);
			fg_fc_set_free(objects);
			return 2;
		}
		for (unsigned i = 0; i < n_workers; i++)
			ios[i] = fg_dpdk_io_lane(dio, i);
	} else {
		sio = fg_sock_io_create(&s.listen, n_buffers, &err);
		if (!sio) {
			fprintf(stderr, "fairgate: cannot listen on %s: %s\n",
				fg_endpoint_format(&s.listen, ep, sizeof(ep)), strerror(-err));
			fg_fc_config_free(fc);
			fg_fc_set_free(objects);
			return 1;
		}
		ios[0] = fg_sock_io_as_io(sio);
	}

	rcu_register_thread();
	workers = calloc(n_workers, sizeof(*workers));
	if (!workers || (n_workers > 1 && fg_mesh_init(&mesh, n_workers, FG_HANDOFF_RING_SIZE))) {
		fprintf(stderr, "fairgate: out of memory for %u workers\n", n_workers);
		goto out;
	}
	fg_config_publish(&published_config, fg_settings_compile(&s, fc, 1));
	if (!published_config) {
		fprintf(stderr, "fairgate: out of memory for the configuration\n");
		goto out;
	}
	for (unsigned i = 0; i < n_workers; i++) {
		struct fg_worker *w = workers[i] = aligned_alloc(64, (sizeof(*w) + 63) / 64 * 64);
		if (!w || fg_worker_init(w, i, ios[i], s.max_requests) || (n_workers > 1 && fg_worker_join(w, &mesh)) ||
		    fg_worker_configure(w, published_config, fg_now_ns())) {
			fprintf(stderr, "fairgate: out of memory for worker %u (%u request slots)\n", i, s.max_requests);
			goto out;
		}
		stats[i] = &w->stats;
	}
	struct fg_settings *control_settings = malloc(sizeof(*control_settings));
	if (!control_settings) {
		fprintf(stderr, "fairgate: out of memory\n");
		goto out;
	}
	*control_settings = s; /* the control thread's own copy, changed by apply */
	struct fg_control_view view = {
		.settings = control_settings, .config_ptr = &published_config, .worker_stats = stats, .n_workers = n_workers,
		.start_ns = fg_now_ns(), .shutting_down = &shutting_down, .objects = objects,
		.allotter = n_workers > 1 ? &allotter_stats : NULL,
	};
	objects = NULL; /* the control thread owns the object set now */
	ctl = fg_control_start(&view, errbuf, sizeof(errbuf));
	if (!ctl) {
		fg_fc_set_free(view.objects);
		free(control_settings);
		fprintf(stderr, "fairgate: %s\n", errbuf);
		goto out;
	}
	if (n_workers > 1) {
		/* A DPDK control thread: on the CPUs EAL started with minus the
		 * lcores (the main lcore's CPU when there are none left). */
		if (rte_ctrl_thread_create(&allotter, "fg-allotter", NULL, allotter_main, NULL)) {
			fprintf(stderr, "fairgate: cannot start the allotter thread\n");
			goto out;
		}
		allotter_running = true;
	}
	fprintf(stderr, "fairgate %s: %s mode on %s, %u worker(s), %u backend(s), seat limit %u, control socket %s\n",
		FG_VERSION, s.io == FG_IO_DPDK ? "dpdk" : "socket", fg_endpoint_format(&s.listen, ep, sizeof(ep)),
		n_workers, s.n_backends, s.seat_limit, s.control_socket);
	if (n_workers > 1 && dio && fg_dpdk_io_rx_queues(dio) < n_workers)
		fprintf(stderr, "fairgate: the port has %u RX queue(s): worker 0 receives for all and hands requests over\n",
			fg_dpdk_io_rx_queues(dio));

	/* Worker 0 on this (the main) lcore, the others on the next lcores. */
	if (n_workers > 1) {
		unsigned launched = 1, lcore;
		RTE_LCORE_FOREACH_WORKER(lcore) {
			if (launched >= n_workers)
				break;
			rte_eal_remote_launch(worker_lcore_main, workers[launched++], lcore);
		}
		lcores_launched = true;
	}
	run_worker(workers[0], &s);
	if (lcores_launched)
		rte_eal_mp_wait_lcore();
	lcores_launched = false;

	uint64_t received = 0, responded = 0, rejected = 0, malformed = 0;
	for (unsigned i = 0; i < n_workers; i++) {
		const struct fg_worker_stats *st = &workers[i]->stats;
		received += st->received;
		responded += st->responded;
		malformed += st->rx_malformed;
		for (int r = 0; r < FG_REJECT__COUNT; r++)
			rejected += st->rejected[r];
	}
	fprintf(stderr, "fairgate: shut down (signal %d): %llu requests, %llu responded, %llu rejected, "
		"%llu malformed datagrams\n", (int)stop_signal, (unsigned long long)received,
		(unsigned long long)responded, (unsigned long long)rejected, (unsigned long long)malformed);
	rc = 0;
out:
	if (allotter_running) {
		__atomic_store_n(&allotter_stop, 1, __ATOMIC_RELEASE);
		rcu_thread_offline();
		pthread_join(allotter, NULL);
		rcu_thread_online();
	}
	fg_control_stop(ctl);
	fg_fc_set_free(objects);
	if (mesh.rings)
		fg_mesh_fini(&mesh, ios);
	for (unsigned i = 0; workers && i < n_workers; i++) {
		if (workers[i] && workers[i]->reqs.slots)
			fg_worker_fini(workers[i]);
		free(workers[i]);
	}
	free(workers);
	fg_config_publish(&published_config, NULL);
	rcu_thread_offline(); /* rcu_barrier waits for a grace period: not from an online reader */
	rcu_barrier();
	rcu_unregister_thread();
	fg_sock_io_free(sio);
	fg_dpdk_io_free(dio);
	return rc;
}
