/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: what cluster mode reads from etcd — the JSON gateway's
 * answers (control/etcd.h: range, lease, txn) and the members' records in
 * them (control/cluster.h).  The first byte picks the parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "etcd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *body = (const char *)data + 1;
	size_t len = size - 1;
	char why[256];
	switch (data[0] % 5) {
	case 0: {
		struct fg_etcd_range r;
		if (fg_etcd_parse_range(body, len, &r, why, sizeof(why)) == 0)
			for (size_t i = 0; i < r.n; i++) /* every value is terminated within its bound */
				if (strlen(r.kvs[i].value) > r.kvs[i].value_len || r.kvs[i].value_len >= FG_ETCD_VALUE_MAX)
					abort();
		fg_etcd_range_free(&r);
		break;
	}
	case 1: {
		int64_t id, ttl;
		fg_etcd_parse_lease(body, len, &id, &ttl, why, sizeof(why));
		break;
	}
	case 2: {
		bool ok;
		fg_etcd_parse_txn(body, len, &ok, why, sizeof(why));
		break;
	}
	default: {
		struct fg_cluster_record rec;
		if (fg_cluster_parse_record(body, len, data[0] % 5 == 4, &rec, why, sizeof(why)) == 0 && rec.n > FG_MAX_LEVELS)
			abort();
		fg_cluster_record_free(&rec);
	}
	}
	return 0;
}
