/*
 * dpdk_io — the DPDK I/O mode: one port (the first one EAL probes, e.g. a
 * net_tap, net_ring or a real NIC), Ethernet/IPv4/UDP in and out, ARP replies
 * for fairgate's own address, backends by static MAC or ARP.
 *
 * fairgate's address is the --listen address.  Replies go to the sender's MAC.
 * Thread contract: create/free from main; the io ops from the one worker.
 */
#ifndef FG_DPDK_IO_H
#define FG_DPDK_IO_H

#include <stddef.h>
#include <stdint.h>

#include "io.h"
#include "settings.h"

struct fg_dpdk_io;

struct fg_dpdk_io *fg_dpdk_io_create(int eal_argc, char **eal_argv, const struct fg_settings *s,
				     uint32_t n_buffers, char *errbuf, size_t errlen);
/* Drive an already probed port (e.g. one made with rte_eth_from_rings) in a
 * process whose EAL is up; fg_dpdk_io_free then leaves the EAL running. */
struct fg_dpdk_io *fg_dpdk_io_attach(uint16_t port, const struct fg_settings *s, uint32_t n_buffers, char *errbuf,
				     size_t errlen);
void fg_dpdk_io_free(struct fg_dpdk_io *d);
struct fg_io fg_dpdk_io_as_io(struct fg_dpdk_io *d);

#endif
