/* SPDX-License-Identifier: Apache-2.0 */
/* defs — tunables and documented defaults shared by every component
 * (docs/configuration.md lists them; change both together). */
#ifndef FG_DEFS_H
#define FG_DEFS_H

#define FG_VERSION "0.1.0"

#include "compiler.h" /* FG_CACHE_LINE, FG_CACHE_ALIGN */

#define FG_DEFAULT_LISTEN "127.0.0.1:7400"
#define FG_DEFAULT_CONTROL_SOCKET "/run/fairgate/fairgate.sock"
#define FG_DEFAULT_CONTROL_SOCKET_MODE 0660u /* owner and group may connect */
#define FG_CONTROL_SOCKET_MODE_MASK 0770u   /* never others: any local user could read the configuration */
#define FG_GROUP_NAME_MAX 32u               /* controlSocketGroup, NUL included (useradd's limit is 32) */
#define FG_DEFAULT_HTTP_LISTEN "127.0.0.1:9400"  /* httpListen: /metrics, /healthz, /readyz (loopback) */
#define FG_DEFAULT_SEAT_LIMIT 600u           /* serverConcurrencyLimit, as Kubernetes */
#define FG_DEFAULT_QUEUE_WAIT_NS 15000000000ull
#define FG_DEFAULT_BACKEND_TIMEOUT_NS 30000000000ull
#define FG_DEFAULT_SHUTDOWN_GRACE_NS 5000000000ull
#define FG_DEFAULT_RETRY_AFTER_MS 0u         /* 0: adaptive per level (common/edge/retryafter.h) */
#define FG_FALLBACK_RETRY_AFTER_MS 1000u     /* adaptive mode, a REJECT outside any level */
#define FG_MAX_RETRY_AFTER_MS 3600000u      /* an hour */
#define FG_DEFAULT_EJECT_AFTER 3u             /* consecutive backend timeouts */
#define FG_MAX_EJECT_AFTER 1000000u
#define FG_DEFAULT_EJECT_NS 1000000000ull     /* first ejection; doubles per failed probe */
#define FG_DEFAULT_MAX_EJECT_NS 30000000000ull
#define FG_DEFAULT_MAX_REQUESTS 16384u       /* request slots per worker */
#define FG_DEFAULT_ALLOTMENT_PERIOD_NS 1000000ull /* 1 ms: seats re-split between workers */
#define FG_MIN_ALLOTMENT_PERIOD_NS 100000ull  /* 100 us */
#define FG_ALLOT_SIGNAL_POLL_NS 50000ull   /* the allotter looks for workers' demand signals this often */
#define FG_MAX_ALLOTMENT_PERIOD_NS 100000000ull /* 100 ms */
#define FG_DEFAULT_BORROWING_PERIOD_NS 10000000000ull /* 10 s: Kubernetes' borrowingAdjustmentPeriod */
#define FG_MIN_BORROWING_PERIOD_NS 100000000ull     /* 100 ms */
#define FG_MAX_BORROWING_PERIOD_NS 3600000000000ull  /* 1 h */
/* The levels' seat demand is sampled from the workers' gauges this often
 * (the borrowing integrators see a step function at this resolution). */
#define FG_BORROWING_SAMPLE_NS 10000000ull         /* 10 ms */
_Static_assert(FG_BORROWING_SAMPLE_NS * 10 <= FG_MIN_BORROWING_PERIOD_NS, "a period holds several samples");
#define FG_MAX_WORKER_CORES 64u
#define FG_HANDOFF_RING_SIZE 4096u        /* hand-offs in flight into one worker, from all others */
#define FG_HANDOFF_RING_MIN 64u           /* ... but at least two bursts from each */
#define FG_ANSWER_RESERVE 64u             /* buffers a worker keeps for answers it owes (timeouts, shutdown) */

#define FG_MAX_LEVELS 256u                   /* priority levels a worker tracks at once */
/* Priority levels a configuration may hold: half of a worker's slots, so a
 * configuration that renames every level still fits while the old ones drain. */
#define FG_MAX_CONFIG_LEVELS (FG_MAX_LEVELS / 2)
#define FG_LEVEL_NAME_MAX 64u

#define FG_MAX_BACKENDS 64u
#define FG_BACKEND_SPEC_MAX 96u /* "ADDR:PORT[@MAC][,seats=N]" as text, its terminator included */
#define FG_MAX_BACKEND_SEATS 1000000u     /* a backend's capacity, seats=N */
#define FG_MAX_SEAT_LIMIT 1000000u
#define FG_MAX_MAX_REQUESTS (1u << 24)
#define FG_RX_BURST 32u
#define FG_IDLE_WAIT_NS 1000000ull           /* socket mode: longest sleep when idle */
#define FG_SHARED_WAIT_NS 50000ull           /* ... of one of several workers whose requests wait for seats */
#define FG_FLOW_TABLE_SIZE 1024u             /* per-flow statistics entries (power of two) */
#define FG_FLOW_NAME_MAX 512u            /* "schema/distinguisher" escaped, NUL included: a 253-byte schema and a long user whole */
#define FG_PERIODIC_PUBLISH_NS 100000000ull /* the levels' R and backends' state in the statistics this often */

#define FG_DEFAULT_MAX_EXTRA_LATENCY_NS 1000000000ull /* 1 s: 200 watchers' worth at 5 ms each over 1 seat */
#define FG_MAX_MAX_EXTRA_LATENCY_NS 60000000000ull   /* 60 s */
#define FG_DEFAULT_CONFIG_HISTORY 10u        /* configHistory: generations kept for rollback */
#define FG_MAX_CONFIG_HISTORY 100u           /* each keeps a copy of the objects and settings */

/* Cluster mode (docs/scale-out.md, control/cluster.h). */
#define FG_DEFAULT_CLUSTER_PERIOD_NS 200000000ull   /* 200 ms between exchanges with etcd */
#define FG_MIN_CLUSTER_PERIOD_NS 20000000ull        /* 20 ms */
#define FG_MAX_CLUSTER_PERIOD_NS 60000000000ull     /* 1 min */
#define FG_DEFAULT_CLUSTER_LEASE_TTL_NS 2000000000ull /* 2 s */
#define FG_MIN_CLUSTER_LEASE_TTL_NS 1000000000ull   /* etcd leases count whole seconds */
#define FG_MAX_CLUSTER_LEASE_TTL_NS 600000000000ull /* 10 min */
#define FG_CLUSTER_ETCD_MAX 512u                    /* clusterEtcd: the endpoints' text */
#define FG_CLUSTER_MAX_ENDPOINTS 8u
#define FG_CLUSTER_PATH_MAX 256u                    /* clusterEtcdCA, -Cert, -Key, -PasswordFile */
#define FG_CLUSTER_USER_MAX 128u                    /* clusterEtcdUser, clusterEtcdServerName */
#define FG_CLUSTER_PASSWORD_MAX 256u                /* bytes of the password file's first line */
#define FG_CLUSTER_NAME_MAX 64u                     /* clusterName, with its terminator */
#define FG_CLUSTER_MEMBER_MAX 128u                  /* clusterMember, with its terminator */
#define FG_CLUSTER_MAX_MEMBERS 256u                 /* members a member takes into account */
#define FG_MAX_CLUSTER_EXPECTED_MEMBERS FG_CLUSTER_MAX_MEMBERS
#define FG_MAX_CIDRS 32u                     /* trustedSources entries */
#define FG_MAX_SOURCE_IDENTITIES 32u         /* sourceIdentities entries */
#define FG_IDENTITY_NAME_MAX 128u            /* user or group of a source identity, NUL included */
#define FG_IDENTITY_MAX_GROUPS 8u
#define FG_ANONYMOUS_USER "system:anonymous"         /* Kubernetes' unauthenticated subjects */
#define FG_UNAUTHENTICATED_GROUP "system:unauthenticated"

#define FG_CONTROL_MAX_MSG (4u << 20)        /* one control-socket request line */
#define FG_INPUT_FILE_MAX (FG_CONTROL_MAX_MSG / 2) /* an input file: what fairgatectl reads it can send */
#define FG_CONTROL_MAX_ADMINS 16u
#define FG_CONTROL_FOLLOW_WAIT_NS 2000000000ull /* how long apply waits for every worker to follow */
#define FG_CONTROL_MAX_CLIENTS 16u
#define FG_CONTROL_READ_TIMEOUT_MS 5000u

#endif
