/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of what cluster mode reads from etcd: the JSON gateway's
 * answers (control/etcd.c, bodies as etcd 3.4 sends them) and the members'
 * records (control/cluster.c), with every bound and malformed shape refused
 * with a reason.  The member thread itself runs against a real etcd in the
 * e2e test tests/e2e/test_cluster.py. */
#include <errno.h>
#include <stdlib.h>

#include "cluster.h"
#include "etcd.h"
#include "test.h"

#define RANGE_HEAD "{\"header\":{\"cluster_id\":\"1\",\"member_id\":\"2\",\"revision\":\"19\",\"raft_term\":\"2\"}"

static int range(const char *body, struct fg_etcd_range *r, char *why)
{
	return fg_etcd_parse_range(body, strlen(body), r, why, 256);
}

TEST(range_answers)
{
	struct fg_etcd_range r;
	char why[256];
	/* /fg/c/grant/a = {"x":1} and /fg/c/grant/b = 5 (etcd's own answer). */
	CHECK_EQ(range(RANGE_HEAD ",\"kvs\":[{\"key\":\"L2ZnL2MvZ3JhbnQvYQ==\",\"create_revision\":\"2\",\"mod_revision\":\"2\","
		       "\"version\":\"1\",\"value\":\"eyJ4IjoxfQ==\"},{\"key\":\"L2ZnL2MvZ3JhbnQvYg==\",\"create_revision\":\"3\","
		       "\"mod_revision\":\"3\",\"version\":\"1\",\"value\":\"NQ==\",\"lease\":\"2324035643818326283\"}],\"count\":\"2\"}",
		       &r, why), 0);
	CHECK_EQ(r.revision, 19);
	CHECK_EQ(r.n, 2);
	CHECK_STR(r.kvs[0].key, "/fg/c/grant/a");
	CHECK_STR(r.kvs[0].value, "{\"x\":1}");
	CHECK_EQ(r.kvs[1].mod_revision, 3);
	CHECK_EQ(r.kvs[1].lease, 2324035643818326283LL);
	CHECK_STR(r.kvs[1].value, "5");
	fg_etcd_range_free(&r);
	/* Nothing under the prefix: etcd leaves kvs out. */
	CHECK_EQ(range(RANGE_HEAD "}", &r, why), 0);
	CHECK_EQ(r.n, 0);
	fg_etcd_range_free(&r);
	/* Refused, each with a reason. */
	static const char *const bad[] = {
		"", "[]", "{\"kvs\":[]}",                                    /* no header revision */
		RANGE_HEAD ",\"kvs\":{}}",                                   /* kvs not a list */
		RANGE_HEAD ",\"more\":true,\"kvs\":[]}",                    /* more keys than read */
		"{\"header\":{\"revision\":\"-4\"}}",
		"{\"error\":\"etcdserver: mvcc: required revision has been compacted\",\"code\":11}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		CHECK(range(bad[i], &r, why) < 0);
		CHECK(why[0] != 0);
		fg_etcd_range_free(&r);
	}
	/* One bad entry is that entry's problem: marked, the others read. */
	static const char *const bad_entry[] = {
		RANGE_HEAD ",\"kvs\":[{\"key\":\"!!\",\"value\":\"\"},{\"key\":\"YQ==\",\"value\":\"Yg==\"}]}", /* not base64 */
		RANGE_HEAD ",\"kvs\":[{\"key\":\"YQBi\",\"value\":\"\"},{\"key\":\"YQ==\",\"value\":\"Yg==\"}]}", /* a NUL */
		RANGE_HEAD ",\"kvs\":[{\"key\":\"YQ==\",\"value\":\"YQ==\",\"mod_revision\":\"x1\"},"
			   "{\"key\":\"YQ==\",\"value\":\"Yg==\"}]}",
		RANGE_HEAD ",\"kvs\":[7,{\"key\":\"YQ==\",\"value\":\"Yg==\"}]}",
	};
	for (size_t i = 0; i < sizeof(bad_entry) / sizeof(bad_entry[0]); i++) {
		CHECK_EQ(range(bad_entry[i], &r, why), 0);
		CHECK_EQ(r.n, 2);
		CHECK(r.n == 2 && r.kvs[0].bad && !r.kvs[1].bad);
		CHECK(r.n == 2 && !strcmp(r.kvs[1].value, "b"));
		fg_etcd_range_free(&r);
	}
	/* A key past FG_ETCD_KEY_MAX, a value past FG_ETCD_VALUE_MAX: bad entries. */
	size_t big = FG_ETCD_VALUE_MAX * 2;
	char *body = malloc(big + 256), *p = body;
	p += sprintf(p, RANGE_HEAD ",\"kvs\":[{\"key\":\"YQ==\",\"value\":\"");
	for (size_t i = 0; i < FG_ETCD_VALUE_MAX / 3 * 4 + 8; i += 4)
		p += sprintf(p, "QUFB");
	sprintf(p, "\"}]}");
	CHECK_EQ(range(body, &r, why), 0);
	CHECK(r.n == 1 && r.kvs[0].bad && r.kvs[0].value_len == 0);
	fg_etcd_range_free(&r);
	p = body + sprintf(body, RANGE_HEAD ",\"kvs\":[{\"value\":\"\",\"key\":\"");
	for (size_t i = 0; i < FG_ETCD_KEY_MAX / 3 * 4 + 8; i += 4)
		p += sprintf(p, "QUFB");
	sprintf(p, "\"}]}");
	CHECK_EQ(range(body, &r, why), 0);
	CHECK(r.n == 1 && r.kvs[0].bad && r.kvs[0].key[0] == 0);
	fg_etcd_range_free(&r);
	/* More keys than FG_ETCD_MAX_KVS. */
	free(body);
	body = malloc(64 + (FG_ETCD_MAX_KVS + 1) * 32);
	p = body + sprintf(body, RANGE_HEAD ",\"kvs\":[");
	for (unsigned i = 0; i <= FG_ETCD_MAX_KVS; i++)
		p += sprintf(p, "%s{\"key\":\"YQ==\"}", i ? "," : "");
	sprintf(p, "]}");
	CHECK(range(body, &r, why) == -EPROTO);
	CHECK(strstr(why, "at most") != NULL);
	fg_etcd_range_free(&r);
	free(body);
}

TEST(lease_and_txn_answers)
{
	char why[256];
	int64_t id, ttl;
	const char *grant = "{\"header\":{\"revision\":\"1\"},\"ID\":\"2324035643818326277\",\"TTL\":\"2\"}";
	CHECK_EQ(fg_etcd_parse_lease(grant, strlen(grant), &id, &ttl, why, sizeof(why)), 0);
	CHECK_EQ(id, 2324035643818326277LL);
	CHECK_EQ(ttl, 2);
	const char *alive = "{\"result\":{\"header\":{\"revision\":\"3\"},\"ID\":\"77\",\"TTL\":\"3\"}}";
	CHECK_EQ(fg_etcd_parse_lease(alive, strlen(alive), &id, &ttl, why, sizeof(why)), 0);
	CHECK_EQ(id, 77);
	CHECK_EQ(ttl, 3);
	/* A keep-alive of an expired lease: no TTL. */
	const char *gone = "{\"result\":{\"header\":{\"revision\":\"3\"},\"ID\":\"12345\"}}";
	CHECK_EQ(fg_etcd_parse_lease(gone, strlen(gone), &id, &ttl, why, sizeof(why)), -ENOENT);
	const char *nf = "{\"error\":\"etcdserver: requested lease not found\",\"code\":5}";
	CHECK_EQ(fg_etcd_parse_lease(nf, strlen(nf), &id, &ttl, why, sizeof(why)), -ENOENT);
	CHECK(strstr(why, "lease not found") != NULL);
	const char *neg = "{\"ID\":\"1\",\"TTL\":\"-1\"}";
	CHECK_EQ(fg_etcd_parse_lease(neg, strlen(neg), &id, &ttl, why, sizeof(why)), -EPROTO);
	bool ok = true;
	const char *won = "{\"header\":{\"revision\":\"3\"},\"succeeded\":true,\"responses\":[]}";
	CHECK_EQ(fg_etcd_parse_txn(won, strlen(won), &ok, why, sizeof(why)), 0);
	CHECK(ok);
	const char *lost = "{\"header\":{\"revision\":\"3\"}}"; /* the gateway leaves out false */
	CHECK_EQ(fg_etcd_parse_txn(lost, strlen(lost), &ok, why, sizeof(why)), 0);
	CHECK(!ok);
	const char *odd = "{\"header\":{\"revision\":\"3\"},\"succeeded\":\"yes\"}";
	CHECK_EQ(fg_etcd_parse_txn(odd, strlen(odd), &ok, why, sizeof(why)), -EPROTO);
}

static int record(const char *text, bool grant, struct fg_cluster_record *r, char *why)
{
	return fg_cluster_parse_record(text, strlen(text), grant, r, why, 256);
}

TEST(member_records)
{
	struct fg_cluster_record r;
	char why[256];
	CHECK_EQ(record("{\"generation\":4,\"levels\":{\"tests\":{\"limit\":12,\"demand\":7.5},\"catch-all\":{\"limit\":13,"
			"\"demand\":0}}}", false, &r, why), 0);
	CHECK_EQ(r.generation, 4);
	CHECK_EQ(r.n, 2);
	CHECK_STR(r.levels[0].name, "tests");
	CHECK_EQ(r.levels[0].limit, 12);
	CHECK(r.levels[0].demand == 7.5);
	fg_cluster_record_free(&r);
	CHECK_EQ(record("{\"levels\":{\"tests\":5,\"catch-all\":6}}", true, &r, why), 0);
	CHECK_EQ(r.n, 2);
	CHECK_EQ(r.levels[1].grant, 6);
	fg_cluster_record_free(&r);
	static const struct {
		const char *text;
		bool grant;
	} bad[] = {
		{ "{}", true },
		{ "{\"levels\":[]}", true },
		{ "{\"levels\":{\"t\":-1}}", true },
		{ "{\"levels\":{\"t\":1000001}}", true },
		{ "{\"levels\":{\"t\":1.5}}", true },
		{ "{\"levels\":{\"\":1}}", true },
		{ "{\"levels\":{\"t\":1,\"t\":2}}", true },
		{ "{\"levels\":{}}", false },                                    /* no generation */
		{ "{\"generation\":-1,\"levels\":{}}", false },
		{ "{\"generation\":1,\"levels\":{\"t\":{\"limit\":1}}}", false }, /* no demand */
		{ "{\"generation\":1,\"levels\":{\"t\":{\"limit\":1,\"demand\":-0.5}}}", false },
		{ "{\"generation\":1,\"levels\":{\"t\":{\"limit\":1,\"demand\":1e12}}}", false },
		{ "{\"generation\":1,\"levels\":{\"t\":{\"limit\":\"1\",\"demand\":1}}}", false },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		CHECK(record(bad[i].text, bad[i].grant, &r, why) < 0);
		CHECK(why[0] != 0 || strstr(bad[i].text, "\"t\":1,\"t\"")); /* duplicates: jansson refuses */
		fg_cluster_record_free(&r);
	}
	/* A level name past FG_LEVEL_NAME_MAX; more levels than FG_MAX_LEVELS. */
	char text[FG_MAX_LEVELS * 24 + 64], *p = text;
	p += sprintf(p, "{\"levels\":{\"");
	for (unsigned i = 0; i < FG_LEVEL_NAME_MAX; i++)
		*p++ = 'a';
	sprintf(p, "\":1}}");
	CHECK(record(text, true, &r, why) < 0);
	fg_cluster_record_free(&r);
	p = text + sprintf(text, "{\"levels\":{");
	for (unsigned i = 0; i <= FG_MAX_LEVELS; i++)
		p += sprintf(p, "%s\"l%u\":1", i ? "," : "", i);
	sprintf(p, "}}");
	CHECK(record(text, true, &r, why) < 0);
	CHECK(strstr(why, "more than") != NULL);
	fg_cluster_record_free(&r);
}

TEST_MAIN
