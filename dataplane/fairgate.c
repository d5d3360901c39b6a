/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fairgate — the daemon's composition root: start-up (command line, first
 * configuration, I/O, workers, HTTP endpoint, control thread, allotter thread), the worker
 * loop until a signal, the drain, and one teardown that is safe on a
 * partly started daemon.  docs/operations.md describes running it.
 *
 * Threads: the workers (the main thread runs worker 0; the others run on
 * DPDK lcores, or in socket mode on threads of their own), the control thread
 * (control/), libmicrohttpd's thread for the HTTP endpoint (control/http.h;
 * httpListen off: none), and the allotter thread (borrowing between levels,
 * common/runtime/borrower.h; with several workers the allotments, common/runtime/allotter.h).  The control side's threads run on the CPUs the
 * process started with minus the workers' lcores (DPDK mode pins main to
 * worker 0's lcore, and a thread inherits its creator's CPUs).  The
 * process-wide state is what the signal handlers set: the signal that stops
 * them, whether a second one cut the drain short, and the eventfd through
 * which SIGHUP asks the control thread for a reload.
 * The handlers only store and write(2); the work happens on those threads.
 * Logging (control/log.h) is configured right after the command line; from
 * then on every message is a log line, DPDK's own included (a stdio stream
 * given to rte_openlog_stream).  Workers write none.  Main tells systemd
 * READY=1 as worker 0 starts polling (the control thread tells the rest).
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include <sys/eventfd.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>
#include <urcu-qsbr.h>

#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_log.h>

#include "allotter.h"
#include "borrower.h"
#include "clock.h"
#include "cluster.h"
#include "control.h"
#include "daemon_args.h"
#include "defs.h"
#include "dpdk_io.h"
#include "http.h"
#include "log.h"
#include "sock_io.h"
#include "telemetry.h"
#include "workerset.h"

static volatile sig_atomic_t stop_signal, stop_now;
static int reload_fd = -1; /* set before the handlers are installed */
static cpu_set_t start_cpus;  /* the CPUs the process may use, before EAL pins main */

/* SIGTERM, SIGINT, SIGQUIT: the first starts the drain, the next ends it. */
static void on_stop(int sig)
{
	if (stop_signal)
		stop_now = 1;
	else
		stop_signal = sig;
}

/* SIGHUP: wake the control thread, which re-applies --config. */
static void on_hup(int sig)
{
	(void)sig;
	int saved = errno;
	uint64_t one = 1;
	ssize_t w = write(reload_fd, &one, sizeof(one)); /* full (EAGAIN): a reload is pending anyway */
	(void)w;
	errno = saved;
}

static void install_signals(void)
{
	struct sigaction stop = { .sa_handler = on_stop }, hup = { .sa_handler = on_hup, .sa_flags = SA_RESTART };
	sigaction(SIGINT, &stop, NULL);
	sigaction(SIGTERM, &stop, NULL);
	sigaction(SIGQUIT, &stop, NULL);
	sigaction(SIGHUP, &hup, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* Everything the daemon runs, in start-up order; teardown undoes it in
 * reverse, whatever was reached. */
struct daemon {
	struct fg_daemon_args args;
	struct fg_settings *s;              /* = &args.settings */
	struct fg_sock_io *sio[FG_MAX_WORKER_CORES]; /* socket mode: one lane per worker */
	struct fg_dpdk_io *dio;
	FILE *dpdk_log;                     /* DPDK's log stream into ours (log.h) */
	struct fg_config *published;        /* RCU-protected: workers read it, control publishes */
	struct fg_workerset workers;
	struct fg_worker_stats *stats[FG_MAX_WORKER_CORES]; /* the control and HTTP threads read them */
	struct fg_control *ctl;
	struct fg_http *http;               /* NULL: httpListen off */
	struct fg_vis *vis;                 /* worker snapshots for dumps and pending requests; outlives the workers' polls */
	int shutting_down;                  /* the control thread reports it (FG_WRITE_ONCE / FG_READ_ONCE) */
	struct fg_config_changes changes;   /* the control thread counts, /metrics shows */
	unsigned workers_done;              /* workers past their own drain */
	struct fg_allotter allotter;
	struct fg_borrower *borrower;       /* the allotter thread steps it; status and /metrics read its view */
	struct fg_clustershare *cluster_share; /* cluster mode: between the cluster and allotter threads */
	struct fg_cluster *cluster;         /* cluster mode's member thread; NULL: off */
	uint64_t drain_cut_until_ns;        /* a drain ended with requests executing: the latest of their
					     * backend time-outs (0: none cut) */
	pthread_t allotter_thread;
	pthread_t worker_threads[FG_MAX_WORKER_CORES]; /* socket mode: workers 1..n-1 */
	unsigned worker_threads_started;
	int allotter_stop;                  /* __atomic release/acquire */
	bool allotter_running, lcores_launched, rcu_registered;
};

/* A worker and the daemon it belongs to (an lcore's argument). */
struct worker_arg {
	struct daemon *d;
	struct fg_worker *w;
};

/* The worker loop: runs until a signal, then drains within the grace period.
 * With several workers, a worker past its drain keeps taking what the others
 * hand over (and answers it shutting-down) until all are past theirs. */
static void run_worker(struct daemon *d, struct fg_worker *w)
{
	uint64_t drain_deadline = 0;
	bool reports_pool = w->id == 0 || w->io.ops->pool_per_lane; /* a shared pool: worker 0 reports it */
	if (reports_pool && w->io.ops->pool_size)
		FG_STAT_SET(w->stats.buffers_total, w->io.ops->pool_size(w->io.ctx));
	for (;;) {
		rcu_quiescent_state();
		const struct fg_config *cfg = rcu_dereference(d->published);
		uint64_t now = fg_now_ns();
		FG_STAT_SET(w->stats.heartbeat_ns, now); /* /readyz: this worker polls */
		if (stop_signal && !w->draining) {
			FG_WRITE_ONCE(d->shutting_down, 1);
			drain_deadline = now + (uint64_t)d->s->shutdown_grace_ns;
			fg_worker_drain(w, cfg, now);
		}
		unsigned n = fg_worker_poll(w, cfg, now);
		fg_stats_poll(&w->stats, now, n != 0);
		if (reports_pool)
			FG_STAT_SET(w->stats.buffers_in_use, w->io.ops->in_use(w->io.ctx));
		if (w->draining && (w->executing.count == 0 || now >= drain_deadline || stop_now)) {
			if (w->executing.count) { /* cut short: those may still run at the backends, at most
						    * until their backend time-out (the list is in dispatch order) */
				uint64_t until = w->reqs.slots[w->executing.tail].deadline_ns;
				uint64_t was = __atomic_load_n(&d->drain_cut_until_ns, __ATOMIC_ACQUIRE);
				while (until > was && !__atomic_compare_exchange_n(&d->drain_cut_until_ns, &was, until, false,
										 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
					;
			}
			fg_worker_abort_executing(w, cfg, now);
			break;
		}
		/* A snapshot under way (common/req/pending.h) is copied a piece per poll: no sleep meanwhile. */
		if (n == 0 && w->io.ops->wait && !(w->snap && fg_snap_box_pending(w->snap))) {
			uint64_t next = fg_worker_next_deadline(w);
			uint64_t sleep = next > now ? next - now : 0;
			if (sleep > FG_IDLE_WAIT_NS)
				sleep = FG_IDLE_WAIT_NS;
			/* Its requests wait for seats the allotter may grant any
			 * moment (a round within 50 us of asking). */
			if (d->workers.n > 1 && w->waiting.head != FG_REQ_NIL && sleep > FG_SHARED_WAIT_NS)
				sleep = FG_SHARED_WAIT_NS;
			rcu_thread_offline();
			w->io.ops->wait(w->io.ctx, sleep);
			rcu_thread_online();
		}
	}
	if (d->workers.n == 1)
		return;
	__atomic_add_fetch(&d->workers_done, 1, __ATOMIC_ACQ_REL);
	/* Nothing is pushed after a worker counts itself done (it stops
	 * receiving), so one last pass after everyone is done empties the rings. */
	for (int last = 0;;) {
		rcu_quiescent_state();
		fg_worker_poll_handoffs(w, rcu_dereference(d->published), fg_now_ns());
		if (last)
			break;
		last = __atomic_load_n(&d->workers_done, __ATOMIC_ACQUIRE) == d->workers.n;
	}
}

/* A worker lcore other than the main one. */
static int worker_lcore_main(void *arg)
{
	struct worker_arg *wa = arg;
	rcu_register_thread();
	run_worker(wa->d, wa->w);
	rcu_unregister_thread();
	return 0;
}

/* Socket mode: a worker thread other than the main one. */
static void *worker_thread_main(void *arg)
{
	worker_lcore_main(arg);
	return NULL;
}

/* Workers 1..n-1: on the next DPDK lcores, or (socket mode) on threads of
 * their own, which the kernel schedules.  0, or 1 when a thread could not
 * start (the caller then stops the ones that did). */
static int launch_workers(struct daemon *d, struct worker_arg *args)
{
	unsigned launched = 1, lcore;
	if (d->dio) {
		RTE_LCORE_FOREACH_WORKER(lcore) {
			if (launched >= d->workers.n)
				break;
			args[launched] = (struct worker_arg){ d, d->workers.w[launched] };
			rte_eal_remote_launch(worker_lcore_main, &args[launched], lcore);
			launched++;
		}
		d->lcores_launched = true;
		return 0;
	}
	for (; launched < d->workers.n; launched++) {
		args[launched] = (struct worker_arg){ d, d->workers.w[launched] };
		int rc = pthread_create(&d->worker_threads[launched], NULL, worker_thread_main, &args[launched]);
		if (rc) {
			fg_logf(FG_LOG_ERROR, "cannot start worker %u's thread: %s", launched, strerror(rc));
			/* The workers never started count as past their drain. */
			__atomic_add_fetch(&d->workers_done, d->workers.n - launched, __ATOMIC_ACQ_REL);
			return 1;
		}
		char name[16];
		snprintf(name, sizeof(name), "fg-worker-%u", launched);
		pthread_setname_np(d->worker_threads[launched], name);
		d->worker_threads_started = launched;
	}
	return 0;
}

/* Wait for the workers launch_workers started. */
static void join_workers(struct daemon *d)
{
	if (d->lcores_launched)
		rte_eal_mp_wait_lcore();
	d->lcores_launched = false;
	for (unsigned i = 1; i <= d->worker_threads_started; i++)
		pthread_join(d->worker_threads[i], NULL);
	d->worker_threads_started = 0;
}

/* The allotter thread steps borrowing between levels (common/runtime/borrower.h)
 * and, with several workers, the allotment policy (common/runtime/allotter.h), and
 * sleeps between steps, offline for RCU.  Borrowing runs here rather than on
 * the control thread: the board's level limits then change only between
 * this thread's own allotment rounds, and the control thread may wait on a
 * command (apply waits for the workers, pending for their snapshots) for
 * longer than a demand sample's interval. */
static void *allotter_main(void *arg)
{
	struct daemon *d = arg;
	rcu_register_thread();
	while (!__atomic_load_n(&d->allotter_stop, __ATOMIC_ACQUIRE)) {
		const struct fg_config *cfg = rcu_dereference(d->published);
		uint64_t now = fg_now_ns();
		fg_borrower_step(d->borrower, cfg, d->stats, d->workers.n, now);
		fg_allotter_step(&d->allotter, cfg, fg_workerset_all_follow(&d->workers, cfg->generation), now);
		uint64_t nap = fg_borrower_nap_ns(d->borrower, fg_now_ns());
		if (cfg->board && fg_allotter_nap_ns(cfg) < nap)
			nap = fg_allotter_nap_ns(cfg);
		struct timespec ts = { (time_t)(nap / FG_NS_PER_SEC), (long)(nap % FG_NS_PER_SEC) };
		rcu_thread_offline();
		nanosleep(&ts, NULL);
		rcu_thread_online();
	}
	rcu_unregister_thread();
	return NULL;
}

/* The level of the DPDK message being written (rte_openlog_stream). */
static enum fg_log_level dpdk_msg_level(void)
{
	int l = rte_log_cur_msg_loglevel();
	return l <= (int)RTE_LOG_ERR ? FG_LOG_ERROR : l == (int)RTE_LOG_WARNING ? FG_LOG_WARN
		: l == (int)RTE_LOG_DEBUG ? FG_LOG_DEBUG : FG_LOG_INFO;
}

/* DPDK's own lines (EAL, drivers) go into the daemon's log, filtered by
 * logLevel at the source too (EAL's --log-level, given after --, wins). */
static void route_dpdk_log(struct daemon *d)
{
	static const uint32_t dpdk_levels[] = { [FG_LOG_DEBUG] = RTE_LOG_DEBUG, [FG_LOG_INFO] = RTE_LOG_INFO,
						[FG_LOG_WARN] = RTE_LOG_WARNING, [FG_LOG_ERROR] = RTE_LOG_ERR };
	if ((d->dpdk_log = fg_log_stream_open("dpdk", dpdk_msg_level)))
		rte_openlog_stream(d->dpdk_log);
	rte_log_set_global_level(dpdk_levels[d->s->log_level]);
}

/* The I/O of the chosen mode: one lane per worker.  1 on failure (printed). */
static int start_io(struct daemon *d, int eal_argc, char **eal_argv, struct fg_io *ios)
{
	char errbuf[256], ep[32];
	int err = 0;
	unsigned n = d->s->workers;
	/* Waiting requests hold their datagram: one buffer per request slot. */
	uint32_t n_buffers = d->s->max_requests + FG_RX_BURST * 4;
	if (d->s->io == FG_IO_SOCKET) {
		/* Several lanes share the port (SO_REUSEPORT): first make sure
		 * nothing else holds it, as one lane's plain bind would. */
		if (n > 1 && (err = fg_sock_io_claim_port(&d->s->listen)) < 0) {
			fg_logf(FG_LOG_ERROR, "cannot listen on %s: %s", fg_endpoint_format(&d->s->listen, ep, sizeof(ep)),
				strerror(-err));
			return 1;
		}
		for (unsigned i = 0; i < n; i++) {
			if (!(d->sio[i] = fg_sock_io_create(&d->s->listen, n_buffers, n > 1, &err))) {
				fg_logf(FG_LOG_ERROR, "cannot listen on %s (worker %u): %s",
					fg_endpoint_format(&d->s->listen, ep, sizeof(ep)), i, strerror(-err));
				return 1;
			}
			ios[i] = fg_sock_io_as_io(d->sio[i]);
		}
		return 0;
	}
	route_dpdk_log(d);
	if (!(d->dio = fg_dpdk_io_create(eal_argc, eal_argv, d->s, n_buffers, n, errbuf, sizeof(errbuf)))) {
		fg_logf(FG_LOG_ERROR, "DPDK: %s", errbuf);
		return 1;
	}
	if (rte_lcore_count() < n) {
		fg_logf(FG_LOG_ERROR, "--workers %u needs %u DPDK lcores; EAL has %u (give e.g. -l 0-%u or --lcores)", n,
			n, rte_lcore_count(), n - 1);
		return 2;
	}
	for (unsigned i = 0; i < n; i++)
		ios[i] = fg_dpdk_io_lane(d->dio, i);
	if (n > 1)
		fg_logf(FG_LOG_INFO, "answers from backends: %s", fg_dpdk_io_steering(d->dio));
	if (n > 1 && fg_dpdk_io_rx_queues(d->dio) < n)
		fg_logf(FG_LOG_WARN,
			"the port has %u RX queue(s) for %u workers: a request is queued where it is received, so "
			"worker 0 does all the work and the others only send (a port with RSS spreads the flows)",
			fg_dpdk_io_rx_queues(d->dio), n);
	return 0;
}

/* The CPUs for the control side's threads: those the process started with,
 * minus the lcores that run workers (all of them when none would be left). */
static void control_cpus(const struct daemon *d, cpu_set_t *set)
{
	*set = start_cpus;
	if (d->s->io != FG_IO_DPDK)
		return;
	unsigned lcores[FG_MAX_WORKER_CORES], n = 0, lcore;
	lcores[n++] = rte_get_main_lcore(); /* worker 0; the others as run() launches them */
	RTE_LCORE_FOREACH_WORKER(lcore) {
		if (n < d->workers.n)
			lcores[n++] = lcore;
	}
	for (unsigned i = 0; i < n; i++) {
		cpu_set_t c = rte_lcore_cpuset(lcores[i]);
		for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &c))
				CPU_CLR(cpu, set);
	}
	if (CPU_COUNT(set) == 0)
		*set = start_cpus;
}

/* The default member id: <hostname>-<listen address>, in the characters
 * a member id may have. */
static void default_member(const struct fg_settings *s, char *out, size_t len)
{
	char host[64] = "host", ep[32];
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = 0;
	for (char *p = host; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_.-", *p))
			*p = '-';
	snprintf(out, len, "%s-%s", host, fg_endpoint_format(&s->listen, ep, sizeof(ep)));
}

/* The first line of clusterEtcdPasswordFile, or "" without one.  0, or 1
 * with the reason logged. */
static int read_etcd_password(const char *path, char *out, size_t cap)
{
	out[0] = 0;
	if (!path[0])
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC); /* no stdio: its buffer would keep the password */
	if (fd < 0) {
		fg_logf(FG_LOG_ERROR, "cluster mode: cannot read clusterEtcdPasswordFile %s: %s", path, strerror(errno));
		return 1;
	}
	struct stat st;
	if (!fstat(fd, &st) && (st.st_mode & 0077))
		fg_logf(FG_LOG_WARN, "cluster mode: clusterEtcdPasswordFile %s can be read by others (mode %04o): "
			"chmod 600 it", path, (unsigned)(st.st_mode & 07777));
	ssize_t n = read(fd, out, cap - 1);
	close(fd);
	out[n > 0 ? n : 0] = 0;
	size_t line = strcspn(out, "\r\n");
	bool whole = n > 0 && (line < (size_t)n || (size_t)n < cap - 1); /* a line end, or the whole file */
	sodium_memzero(out + line, cap - line);
	if (!whole || !out[0]) {
		sodium_memzero(out, cap);
		fg_logf(FG_LOG_ERROR, "cluster mode: clusterEtcdPasswordFile %s: its first line must be the password "
			"(1-%zu bytes)", path, cap - 2);
		return 1;
	}
	return 0;
}

/* Cluster mode's member thread (control/cluster.h), when clusterEtcd is set. */
static int start_cluster(struct daemon *d)
{
	char why[256], member[FG_CLUSTER_MEMBER_MAX], password[FG_CLUSTER_PASSWORD_MAX];
	if (!d->cluster_share)
		return 0;
	if (read_etcd_password(d->s->cluster_etcd_password_file, password, sizeof(password)))
		return 1;
	if (d->s->cluster_member[0])
		snprintf(member, sizeof(member), "%s", d->s->cluster_member);
	else
		default_member(d->s, member, sizeof(member));
	struct fg_cluster_opts o = { .etcd = d->s->cluster_etcd, .name = d->s->cluster_name, .member = member,
				     .period_ns = (uint64_t)d->s->cluster_period_ns,
				     .lease_ttl_ns = (uint64_t)d->s->cluster_lease_ttl_ns,
				     .expected_members = d->s->cluster_expected_members,
				     .tls = { .ca = d->s->cluster_etcd_ca, .cert = d->s->cluster_etcd_cert,
					      .key = d->s->cluster_etcd_key, .server_name = d->s->cluster_etcd_server_name,
					      .user = d->s->cluster_etcd_user, .password = password } };
	d->cluster = fg_cluster_start(&o, d->cluster_share, why, sizeof(why));
	sodium_memzero(password, sizeof(password)); /* the client keeps its own copy */
	if (!d->cluster) {
		fg_logf(FG_LOG_ERROR, "cluster mode: %s", why);
		return 1;
	}
	fg_logf(FG_LOG_INFO, "cluster mode: member %s of cluster %s, etcd %s (levels start at 0 seats until granted)",
		member, d->s->cluster_name, d->s->cluster_etcd);
	return 0;
}

/* The HTTP endpoint (httpListen), started on the control side's CPUs; it
 * reads what the control thread reads, none of the control thread's own. */
static int start_http(struct daemon *d)
{
	char errbuf[256], ep[32];
	if (!d->s->http.on)
		return 0;
	struct fg_http_view view = { .config_ptr = &d->published, .worker_stats = d->stats, .n_workers = d->workers.n,
				     .allotter = d->workers.n > 1 ? &d->allotter.stats : NULL,
				     .borrowing = &d->borrower->view, .shutting_down = &d->shutting_down, .changes = &d->changes, .vis = d->vis,
				     .cluster = d->cluster };
	if (!(d->http = fg_http_start(&d->s->http.ep, &view, errbuf, sizeof(errbuf)))) {
		fg_logf(FG_LOG_ERROR, "%s", errbuf);
		return 1;
	}
	if (!fg_ip_is_loopback(d->s->http.ep.ip))
		fg_logf(FG_LOG_WARN, "httpListen %s is not a loopback address: /metrics, /readyz and the "
			"visibility paths (tenants' names) are unauthenticated and reachable from the network (operations.md)",
			fg_endpoint_format(&d->s->http.ep, ep, sizeof(ep)));
	fg_logf(FG_LOG_INFO, "http on %s (/metrics, /healthz, /readyz%s)", fg_http_address(d->http),
		d->vis ? ", /debug/api_priority_and_fairness/, /apis/visibility.fairgate.io/" : "");
	return 0;
}

/* Datagrams dropped for a martian source: DPDK's lanes share one count,
 * socket mode's lanes have one each (any thread: relaxed loads). */
static uint64_t martians_total(void *ctx)
{
	const struct daemon *d = ctx;
	uint64_t n = 0;
	for (unsigned i = 0; i < d->workers.n; i++) {
		const struct fg_io *io = &d->workers.w[i]->io;
		if (io->ops->martians)
			n += io->ops->martians(io->ctx);
		if (!io->ops->pool_per_lane) /* one count for every lane */
			break;
	}
	return n;
}

/* The control thread gets its own copies of the settings and the objects. */
static int start_control(struct daemon *d)
{
	char errbuf[256];
	struct fg_control_view view = {
		.settings = malloc(sizeof(struct fg_settings)), .config_ptr = &d->published, .worker_stats = d->stats,
		.n_workers = d->workers.n, .start_ns = fg_now_ns(), .shutting_down = &d->shutting_down,
		.objects = d->args.objects, .allotter = d->workers.n > 1 ? &d->allotter.stats : NULL,
		.borrowing = &d->borrower->view,
		.reload_fd = reload_fd, .reload_paths = d->args.config_paths, .n_reload_paths = d->args.n_config_paths,
		.changes = &d->changes, .vis = d->vis,
		.backend_mac = d->dio ? fg_dpdk_io_backend_mac : NULL, .backend_mac_ctx = d->dio,
		.martians = martians_total, .martians_ctx = d,
		.cluster = d->cluster,
	};
	snprintf(view.http_listen, sizeof(view.http_listen), "%s", d->http ? fg_http_address(d->http) : "off");
	if (!view.settings) {
		fg_logf(FG_LOG_ERROR, "out of memory");
		return 1;
	}
	*view.settings = *d->s;
	d->ctl = fg_control_start(&view, errbuf, sizeof(errbuf));
	if (!d->ctl) {
		free(view.settings);
		fg_logf(FG_LOG_ERROR, "%s", errbuf);
		return 1;
	}
	d->args.objects = NULL; /* the control thread owns them now */
	return 0;
}

/* The HTTP endpoint, the control thread and (socket mode) the allotter
 * thread, on the control side's CPUs:
 * they inherit the CPUs main has while it starts them, so main moves there
 * for the while and back to worker 0's lcore.  0, or 1 (printed). */
static int start_control_side(struct daemon *d)
{
	for (unsigned i = 0; i < d->workers.n; i++)
		d->stats[i] = &d->workers.w[i]->stats;
	/* Snapshot boxes before any worker polls; without them (out of memory)
	 * the visibility paths and commands are simply absent. */
	if ((d->vis = fg_vis_create(d->workers.n, d->stats, d->s->max_requests)))
		for (unsigned i = 0; i < d->workers.n; i++)
			d->workers.w[i]->snap = fg_vis_box(d->vis, i);
	cpu_set_t main_cpus, ctl_cpus;
	bool moved = !pthread_getaffinity_np(pthread_self(), sizeof(main_cpus), &main_cpus);
	control_cpus(d, &ctl_cpus);
	if (moved && pthread_setaffinity_np(pthread_self(), sizeof(ctl_cpus), &ctl_cpus))
		moved = false;
	if (!(d->borrower = fg_borrower_new())) {
		fg_logf(FG_LOG_ERROR, "out of memory");
		return 1;
	}
	if (d->s->cluster_etcd[0] && !(d->borrower->cluster = d->cluster_share = calloc(1, sizeof(*d->cluster_share)))) {
		fg_logf(FG_LOG_ERROR, "out of memory");
		return 1;
	}
	/* The first step here, before the allotter thread takes the borrower
	 * over: status and /metrics show the levels' limits from the start. */
	fg_borrower_step(d->borrower, d->published, d->stats, d->workers.n, fg_now_ns());
	int rc = start_cluster(d) || start_http(d) || start_control(d);
	if (!rc && d->s->io != FG_IO_DPDK) {
		if (pthread_create(&d->allotter_thread, NULL, allotter_main, d)) {
			fg_logf(FG_LOG_ERROR, "cannot start the allotter thread");
			rc = 1;
		} else {
			d->allotter_running = true;
		}
	}
	if (moved && pthread_setaffinity_np(pthread_self(), sizeof(main_cpus), &main_cpus))
		fg_logf(FG_LOG_WARN, "cannot pin worker 0 back to its lcore's CPUs");
	return rc;
}

/* Everything up to the point where the workers can run.  0, or the exit
 * status (printed). */
static int start(struct daemon *d, int argc, char **argv, int own_argc)
{
	int rc = fg_daemon_args_parse(own_argc, argv, &d->args);
	if (rc)
		return rc == FG_ARGS_DONE ? -1 : 2;
	d->s = &d->args.settings;
	if (d->s->io == FG_IO_SOCKET && argc - own_argc > 1) {
		fprintf(stderr, "fairgate: \"%s\" and the rest after \"--\" are DPDK EAL arguments, for --io dpdk only\n",
			argv[own_argc + 1]);
		return 2;
	}
	fg_log_configure((enum fg_log_format)d->s->log_format, (enum fg_log_level)d->s->log_level);
	uint32_t gid;
	char why[256];
	if (fg_control_socket_gid(d->s->control_socket_group, &gid, why, sizeof(why))) {
		fg_logf(FG_LOG_ERROR, "%s", why); /* a bad setting: refused as the others (exit 2) */
		return 2;
	}
	struct fg_errors errs = { .len = 0 };
	struct fg_fc_config *fc = fg_fc_compile(d->args.objects, d->s->seat_limit, &errs);
	if (!fc) {
		fg_logf(FG_LOG_ERROR, "configuration: %u error(s):", errs.count);
		for (char *line = strtok(errs.text, "\n"); line; line = strtok(NULL, "\n"))
			fg_log(FG_LOG_ERROR, line, FG_LOG_STR("source", "configuration"));
		return 1;
	}
	if (d->args.check_only) {
		fg_daemon_print_check(d->s, fc);
		fg_fc_config_free(fc);
		return -1;
	}
	if (d->s->n_backends == 0)
		fg_logf(FG_LOG_WARN, "no backends configured; every request gets REJECT no-backend");
	/* From here a SIGHUP waits in the eventfd until the control thread runs. */
	reload_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (reload_fd < 0) {
		fg_logf(FG_LOG_ERROR, "eventfd for SIGHUP: %s", strerror(errno));
		return 1;
	}
	install_signals();

	struct fg_io ios[FG_MAX_WORKER_CORES];
	argv[own_argc] = argv[0]; /* EAL wants a program name first */
	if ((rc = start_io(d, argc - own_argc, argv + own_argc, ios))) {
		fg_fc_config_free(fc);
		return rc;
	}
	rcu_register_thread();
	d->rcu_registered = true;
	fg_config_publish(&d->published, fg_config_build(d->s, fc, 1)); /* owns fc, even on failure */
	char err[160];
	if (!d->published) {
		fg_logf(FG_LOG_ERROR, "out of memory for the configuration");
		return 1;
	}
	fg_config_keep_level_limits(d->published, NULL); /* nobody reads it yet: levels start as new ones */
	if (fg_workerset_init(&d->workers, d->s->workers, ios, d->s->max_requests, d->published, fg_now_ns(), err,
			      sizeof(err))) {
		fg_logf(FG_LOG_ERROR, "%s", err);
		return 1;
	}
	if (start_control_side(d))
		return 1;
	if (d->s->io == FG_IO_DPDK && fg_telemetry_register(d->stats, d->workers.n))
		fg_logf(FG_LOG_WARN, "DPDK telemetry commands not registered (/fairgate/...)");
	if (d->s->io == FG_IO_DPDK) {
		/* A DPDK control thread: on the CPUs EAL started with minus the
		 * lcores (the main lcore's CPU when there are none left).  One
		 * worker or several: borrowing runs there (socket mode:
		 * start_control_side starts it). */
		if (rte_ctrl_thread_create(&d->allotter_thread, "fg-allotter", NULL, allotter_main, d)) {
			fg_logf(FG_LOG_ERROR, "cannot start the allotter thread");
			return 1;
		}
		d->allotter_running = true;
	}
	char ep[32];
	fg_log(FG_LOG_INFO, "started", FG_LOG_STR("version", FG_VERSION),
	       FG_LOG_STR("io", d->s->io == FG_IO_DPDK ? "dpdk" : "socket"),
	       FG_LOG_STR("listen", fg_endpoint_format(&d->s->listen, ep, sizeof(ep))), FG_LOG_UINT("workers", d->workers.n),
	       FG_LOG_UINT("backends", d->s->n_backends), FG_LOG_UINT("seatLimit", d->s->seat_limit),
	       FG_LOG_STR("controlSocket", d->s->control_socket),
	       FG_LOG_STR("http", d->http ? fg_http_address(d->http) : "off"),
	       FG_LOG_UINT("generation", d->published->generation));
	return 0;
}

/* Worker 0 on this (the main) thread, the others on the next lcores or on
 * threads of their own, until a signal and the drain; then the totals.
 * 0, or 1 when a worker could not start. */
static int run(struct daemon *d)
{
	static struct worker_arg args[FG_MAX_WORKER_CORES]; /* the workers read theirs until joined */
	int rc = d->workers.n > 1 ? launch_workers(d, args) : 0;
	if (rc) { /* the ones started stop at once, and so does worker 0 */
		stop_signal = SIGTERM;
		stop_now = 1;
	}
	/* systemd (Type=notify): the configuration is published and the workers
	 * poll from here on; the control thread says STOPPING=1 at the drain. */
	sd_notify(0, "READY=1");
	run_worker(d, d->workers.w[0]);
	sd_notify(0, "STOPPING=1"); /* again if the control thread said it: a quick drain may beat it */
	join_workers(d);
	uint64_t received = 0, responded = 0, rejected = 0, malformed = 0;
	for (unsigned i = 0; i < d->workers.n; i++) {
		const struct fg_worker_stats *st = &d->workers.w[i]->stats;
		received += st->received;
		responded += st->responded;
		malformed += st->rx_malformed;
		for (int r = 0; r < FG_REJECT__COUNT; r++)
			rejected += st->rejected[r];
	}
	fg_logf(FG_LOG_INFO, "shut down (signal %d%s): %llu requests, %llu responded, %llu rejected, "
		"%llu malformed datagrams", (int)stop_signal, stop_now ? ", drain cut short by a second signal" : "",
		(unsigned long long)received, (unsigned long long)responded, (unsigned long long)rejected, (unsigned long long)malformed);
	return rc;
}

/* Undo whatever start reached, in reverse order. */
static void teardown(struct daemon *d)
{
	join_workers(d);
	if (d->allotter_running) {
		__atomic_store_n(&d->allotter_stop, 1, __ATOMIC_RELEASE);
		rcu_thread_offline();
		pthread_join(d->allotter_thread, NULL);
		rcu_thread_online();
	}
	fg_http_stop(d->http); /* before the statistics and the configuration it reads */
	fg_control_stop(d->ctl);
	/* After the workers: the lease (and with it this member's grants) goes
	 * back — but requests the drain cut short may still run at the
	 * backends, so their seats stay granted until their backend time-out
	 * (scale-out.md). */
	fg_cluster_stop(d->cluster, __atomic_load_n(&d->drain_cut_until_ns, __ATOMIC_ACQUIRE));
	fg_borrower_free(d->borrower); /* after its readers and its stepping thread */
	free(d->cluster_share);
	if (reload_fd >= 0) {
		signal(SIGHUP, SIG_IGN); /* before its fd goes */
		close(reload_fd);
		reload_fd = -1;
	}
	fg_workerset_fini(&d->workers);
	fg_vis_free(d->vis); /* no worker polls, no HTTP or control thread asks: lent buffers can go */
	if (d->rcu_registered) {
		fg_config_publish(&d->published, NULL);
		rcu_thread_offline(); /* rcu_barrier waits for a grace period: not from an online reader */
		rcu_barrier();
		rcu_unregister_thread();
	}
	for (unsigned i = 0; i < FG_MAX_WORKER_CORES; i++)
		fg_sock_io_free(d->sio[i]);
	fg_dpdk_io_free(d->dio);
	if (d->dpdk_log) {
		rte_openlog_stream(NULL); /* EAL falls back to its own stream */
		fclose(d->dpdk_log);      /* and a last partial line goes out */
	}
	fg_daemon_args_fini(&d->args);
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
	static struct daemon d; /* large (the worker set's io table); zeroed */
	if (sched_getaffinity(0, sizeof(start_cpus), &start_cpus))
		CPU_ZERO(&start_cpus);
	int rc = start(&d, argc, argv, own_argc);
	if (rc == 0)
		rc = run(&d);
	teardown(&d);
	return rc < 0 ? 0 : rc;
}
