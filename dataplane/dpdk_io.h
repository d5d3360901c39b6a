/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dpdk_io — the DPDK I/O mode: one port (the first one EAL probes, e.g. a
 * net_tap, net_ring or a real NIC), Ethernet/IPv4/UDP in and out, ARP replies
 * for fairgate's own address, backends by static MAC or ARP.
 *
 * fairgate's address is the --listen address.  Replies go to the sender's MAC.
 *
 * Several workers: each has a lane — its own TX queue and, where the device
 * spreads flows over RX queues (RSS, or a tap's queues), its own RX queue;
 * otherwise lane 0 receives everything (and worker 0, where requests are
 * queued where they arrive, does all the work: fairgate warns at start).
 * Lane i sends its requests to backends from UDP port listen port + 1 + i,
 * so their answers come to that port: an rte_flow rule per lane steers them
 * to the lane's RX queue where the port takes rules, else whichever lane
 * receives one passes it to its worker (the mesh).  Requests that arrive at
 * a backend-side port are not taken (pkt.backend_side).  The mbuf pool is
 * shared (DPDK's per-lcore caches make it safe from every lane).
 * Thread contract: create/free from main; a lane's io ops from its worker.
 */
#ifndef FG_DPDK_IO_H
#define FG_DPDK_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io.h"
#include "settings.h"

struct fg_dpdk_io;

struct fg_dpdk_io *fg_dpdk_io_create(int eal_argc, char **eal_argv, const struct fg_settings *s,
				     uint32_t n_buffers, unsigned n_lanes, char *errbuf, size_t errlen);
/* Drive an already probed port (e.g. one made with rte_eth_from_rings) in a
 * process whose EAL is up; fg_dpdk_io_free then leaves the EAL running. */
struct fg_dpdk_io *fg_dpdk_io_attach(uint16_t port, const struct fg_settings *s, uint32_t n_buffers, unsigned n_lanes,
				     char *errbuf, size_t errlen);
void fg_dpdk_io_free(struct fg_dpdk_io *d);

/* rte_eal_cleanup (initialized: EAL is up), then remove EAL's runtime
 * directory (the --file-prefix one under /var/run/dpdk or
 * $XDG_RUNTIME_DIR/dpdk) once it is empty: DPDK 22.11 removes its files
 * (the telemetry socket at exit) but leaves the directory, so each run with
 * its own prefix left one behind.  Removed at once or, when telemetry's
 * socket is still there, at exit after DPDK's own exit handlers.  rmdir
 * takes only an empty directory, so one that another process still uses
 * stays.  Also after a failed rte_eal_init (initialized false). */
void fg_dpdk_eal_cleanup(bool initialized);
struct fg_io fg_dpdk_io_as_io(struct fg_dpdk_io *d); /* lane 0 */
struct fg_io fg_dpdk_io_lane(struct fg_dpdk_io *d, unsigned lane);
unsigned fg_dpdk_io_rx_queues(const struct fg_dpdk_io *d);
/* How the backends' answers reach the worker that sent the request, a
 * sentence for the start-up log. */
const char *fg_dpdk_io_steering(const struct fg_dpdk_io *d);
/* What ARP taught about a backend's address ip: 1 and its MAC, 0 still
 * asking, -1 not asked (a static MAC, or not a backend's).  Any thread
 * (status reads it); d is a struct fg_dpdk_io. */
int fg_dpdk_io_backend_mac(const void *d, uint32_t ip, uint8_t mac[6]);

/* The pool's mbufs have no private area, so a datagram lies in the data
 * room right after its mbuf (pkt.h's span; fairgate-bench memory sizes an
 * mbuf with it). */
#define FG_DPDK_MBUF_PRIV 0u

/* Start loading a received burst (each mbuf's header, then the first
 * FG_DPDK_PREFETCH_BYTES of its frame) so that the cache misses of a burst
 * overlap instead of stalling packet by packet: frames arrive written by
 * another core or the NIC, never in this core's cache. */
#define FG_DPDK_PREFETCH_BYTES 256u
struct rte_mbuf;
void fg_dpdk_prefetch_burst(struct rte_mbuf *const *ms, unsigned n);

#endif
