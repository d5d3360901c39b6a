/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: Ethernet/IPv4/UDP/ARP parsing. */
#include <stdlib.h>

#include "netpkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fg_net_frame f;
	if (fg_net_parse(data, size, &f) == FG_NET_UDP && f.payload_off + f.payload_len > size)
		abort();
	return 0;
}
