/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the per-worker flow statistics table (common/req/stats.c). */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "defs.h"
#include "stats.h"
#include "test.h"

static struct fg_worker_stats *new_stats(void)
{
	struct fg_worker_stats *s = malloc(sizeof(*s));
	fg_stats_init(s);
	return s;
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* The name stored for schema "s" and user dist[0..len). */
static const char *name_of(struct fg_worker_stats *s, uint64_t hash, const char *dist, size_t len)
{
	return s->flows[fg_stats_flow(s, hash, 0, "s", dist, (uint16_t)len)].name;
}

/* Whether str is well-formed UTF-8 (checked here independently of stats.c:
 * by the code point ranges of RFC 3629) with no C0/C1 control or DEL. */
static bool printable_utf8(const char *str)
{
	const unsigned char *p = (const unsigned char *)str;
	while (*p) {
		unsigned len = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3 : (*p >> 3) == 30 ? 4 : 0;
		if (!len)
			return false;
		uint32_t c = len == 1 ? *p : *p & (0x7f >> len);
		for (unsigned i = 1; i < len; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			c = c << 6 | (p[i] & 0x3f);
		}
		static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
		if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return false;
		if (c < 0x20 || (c >= 0x7f && c <= 0x9f))
			return false;
		p += len;
	}
	return true;
}

/* Invalid UTF-8, controls and look-alike tricks are escaped per byte;
 * valid characters stay as they are. */
TEST(names_are_escaped_printable_utf8)
{
	struct fg_worker_stats *s = new_stats();
	static const struct {
		const char *in;
		size_t len;
		const char *out;
	} cases[] = {
		{ "alice", 5, "s/alice" },
		{ "bad\xff\xfename", 9, "s/bad\\xff\\xfename" },
		{ "a\x01" "b\x7f" "c\n", 6, "s/a\\x01b\\x7fc\\x0a" },
		{ "back\\slash", 10, "s/back\\x5cslash" },         /* '\' itself: an escape cannot be faked */
		{ "Jos\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80", 14, "s/Jos\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80" },
		{ "\xc0\xaf", 2, "s/\\xc0\\xaf" },                  /* overlong '/' */
		{ "\xe0\x80\xaf", 3, "s/\\xe0\\x80\\xaf" },         /* overlong, three bytes */
		{ "\xed\xa0\x80", 3, "s/\\xed\\xa0\\x80" },         /* a surrogate */
		{ "\xf4\x90\x80\x80", 4, "s/\\xf4\\x90\\x80\\x80" }, /* past U+10FFFF */
		{ "x\xe2\x82", 3, "s/x\\xe2\\x82" },                /* cut short */
		{ "\xc2\x85", 2, "s/\\xc2\\x85" },                  /* C1 NEL */
		{ "evil\xe2\x80\xaetxt", 10, "s/evil\\xe2\\x80\\xaetxt" }, /* RIGHT-TO-LEFT OVERRIDE */
		{ "\xef\xbb\xbf" "a", 4, "s/\\xef\\xbb\\xbfa" },       /* BOM */
		{ "\x80\xc3\xa9", 3, "s/\\x80\xc3\xa9" },            /* a stray continuation, then a character */
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const char *got = name_of(s, 1000 + c, cases[c].in, cases[c].len);
		CHECK_STR(got, cases[c].out);
		CHECK(printable_utf8(got));
	}
	/* The schema goes through the same door. */
	CHECK_STR(s->flows[fg_stats_flow(s, 77, 0, "sch\x1b[31m", "", 0)].name, "sch\\x1b[31m");
	free(s);
}

/* Long names are cut at a character boundary, never inside an escape, and
 * what is kept is a prefix of the whole name. */
TEST(long_names_are_cut_whole)
{
	struct fg_worker_stats *s = new_stats();
	char in[2 * FG_FLOW_NAME_MAX];
	for (size_t i = 0; i < sizeof(in); i += 2)
		in[i] = (char)0xc3, in[i + 1] = (char)0xa9; /* é */
	const char *got = name_of(s, 10, in, sizeof(in));
	size_t len = strlen(got);
	CHECK(len < FG_FLOW_NAME_MAX && len >= FG_FLOW_NAME_MAX - 3);
	CHECK(printable_utf8(got));
	CHECK_EQ((len - 2) % 2, 0);

	memset(in, 0xff, sizeof(in));
	got = name_of(s, 11, in, sizeof(in));
	len = strlen(got);
	CHECK(len < FG_FLOW_NAME_MAX && len >= FG_FLOW_NAME_MAX - 4);
	CHECK_EQ((len - 2) % 4, 0); /* whole "\xff" escapes only */
	for (size_t i = 2; i < len; i += 4)
		CHECK(!strncmp(got + i, "\\xff", 4));

	/* A four-byte character that does not fit is left out whole, and nothing
	 * shorter after it sneaks in. */
	memset(in, 'a', FG_FLOW_NAME_MAX - 4);
	memcpy(in + FG_FLOW_NAME_MAX - 4, "\xf0\x9f\x98\x80zz", 6);
	got = name_of(s, 12, in, FG_FLOW_NAME_MAX + 2);
	CHECK_EQ(strlen(got), FG_FLOW_NAME_MAX - 2);
	CHECK(printable_utf8(got));
	free(s);
}

/* Any bytes at all give a printable UTF-8 name inside the entry. */
TEST(random_bytes_give_printable_names)
{
	struct fg_worker_stats *s = new_stats();
	uint64_t x = 0x9e3779b97f4a7c15ull;
	char in[600];
	unsigned bad = 0;
	for (unsigned n = 0; n < 20000; n++) {
		size_t len = xorshift(&x) % sizeof(in);
		for (size_t i = 0; i < len; i++)
			in[i] = (char)(n & 1 ? xorshift(&x) : 0x7e + xorshift(&x) % 0x50); /* all bytes / near the edges */
		const char *got = name_of(s, xorshift(&x), in, len);
		bad += !printable_utf8(got) || memchr(got, '\0', FG_FLOW_NAME_MAX) == NULL;
	}
	CHECK_EQ(bad, 0);
	free(s);
}

/* 100 000 distinct flows seen once each (a flood of junk names) do not take
 * the table for good: new flows still get entries of their own, and a flow
 * that keeps sending keeps its entry through the flood. */
TEST(junk_flows_age_out)
{
	struct fg_worker_stats *s = new_stats();
	uint64_t x = 0x243f6a8885a308d3ull;
	const uint64_t busy = 0xb05b05b05ull;
	uint32_t busy_i = fg_stats_flow(s, busy, 1, "s", "busy", 4);
	CHECK(busy_i != 0);
	for (unsigned n = 0; n < 100000; n++) {
		fg_stats_flow(s, xorshift(&x) | 2, 1, "s", "junk", 4);
		if (n % 100 == 0) /* a few hundred times per turn of the hand: never idle */
			CHECK_EQ(fg_stats_flow(s, busy, 1, "s", "busy", 4), busy_i);
	}
	CHECK_STR(s->flows[busy_i].name, "s/busy");
	/* Taken back as fast as the countdown allows, and no faster. */
	CHECK(s->flows_reclaimed > 100000 / FG_FLOW_RECLAIM_EVERY * 9 / 10);
	CHECK(s->flows_reclaimed <= 100000 / FG_FLOW_RECLAIM_EVERY + 1);
	CHECK(s->flows_used <= FG_FLOW_TABLE_SIZE);

	/* New tenants after the flood, one after the other: nearly all within
	 * the reclaim countdown, every one within two turns of the hand of its
	 * own misses. */
	unsigned late = 0;
	for (unsigned t = 0; t < 1000; t++) {
		char name[16];
		int len = snprintf(name, sizeof(name), "tenant%u", t);
		uint64_t h = xorshift(&x) | 2;
		uint32_t i = 0, tries = 0;
		while (i == 0 && tries++ < 2 * FG_FLOW_TABLE_SIZE / FG_FLOW_HAND_STEP)
			i = fg_stats_flow(s, h, 2, "s", name, (uint16_t)len);
		late += tries > FG_FLOW_RECLAIM_EVERY;
		CHECK(i != 0);
		char want[24];
		snprintf(want, sizeof(want), "s/%s", name);
		CHECK_STR(s->flows[i].name, want);
		CHECK_EQ(s->flows[i].level, 2);
		CHECK_EQ(s->flows[i].received, 0); /* a reused entry starts from zero */
		CHECK_EQ(fg_stats_flow(s, h, 2, "s", name, (uint16_t)len), i);
	}
	CHECK(late <= 10);
	free(s);
}

/* A flow with requests waiting or executing is never taken back, however
 * long it goes without a lookup; once it is idle it may be. */
TEST(active_flows_are_never_evicted)
{
	struct fg_worker_stats *s = new_stats();
	enum { ACTIVE = 200 };
	uint32_t idx[ACTIVE];
	uint64_t x = 0x13198a2e03707344ull;
	for (unsigned a = 0; a < ACTIVE; a++) {
		idx[a] = fg_stats_flow(s, 5000 + a * 7919ull, 1, "s", "active", 6);
		CHECK(idx[a] != 0);
		if (a % 2)
			FG_STAT_ADD(s->flows[idx[a]].waiting, 1);
		else
			FG_STAT_ADD(s->flows[idx[a]].executing, 1);
	}
	for (unsigned n = 0; n < 100000; n++)
		fg_stats_flow(s, xorshift(&x) | 2, 1, "s", "junk", 4);
	for (unsigned a = 0; a < ACTIVE; a++) {
		CHECK_EQ(s->flows[idx[a]].hash, s->flow_keys[idx[a]]);
		CHECK_STR(s->flows[idx[a]].name, "s/active");
		CHECK_EQ(fg_stats_flow(s, 5000 + a * 7919ull, 1, "s", "active", 6), idx[a]);
	}
	/* Idle now: a new flood takes them back. */
	for (unsigned a = 0; a < ACTIVE; a++) {
		if (a % 2)
			FG_STAT_ADD(s->flows[idx[a]].waiting, -1);
		else
			FG_STAT_ADD(s->flows[idx[a]].executing, -1);
	}
	for (unsigned n = 0; n < 100000; n++)
		fg_stats_flow(s, xorshift(&x) | 2, 1, "s", "junk", 4);
	unsigned kept = 0;
	for (unsigned a = 0; a < ACTIVE; a++)
		kept += !strcmp(s->flows[idx[a]].name, "s/active");
	CHECK(kept < ACTIVE / 4); /* most: an entry behind a free one is reached from fewer homes */
	free(s);
}

/* When every entry within reach is active, later flows share "(other)"
 * (counted) and the active ones are found again. */
TEST(full_of_active_flows_overflows_to_other)
{
	struct fg_worker_stats *s = new_stats();
	enum { FLOWS = 4 * FG_FLOW_TABLE_SIZE };
	static uint32_t idx[FLOWS];
	static uint64_t hashes[FLOWS];
	uint64_t x = 0x452821e638d01377ull;
	unsigned other = 0;
	for (unsigned f = 0; f < FLOWS; f++) {
		hashes[f] = f < 2 ? f : xorshift(&x); /* hashes 0 and 1 are remapped, not lost */
		idx[f] = fg_stats_flow(s, hashes[f], 3, "schema", "user", 4);
		CHECK(idx[f] < FG_FLOW_TABLE_SIZE);
		if (idx[f])
			FG_STAT_ADD(s->flows[idx[f]].waiting, 1);
		else
			other++;
	}
	CHECK(other > 0);
	CHECK_EQ(s->flows_overflow, other);
	CHECK_EQ(s->flows_reclaimed, 0);
	CHECK(s->flows_used >= FG_FLOW_TABLE_SIZE / 4 * 3); /* bounded probing still fills most of it */
	unsigned named = 0;
	for (unsigned f = 0; f < FLOWS; f++)
		if (idx[f]) {
			named++;
			CHECK_EQ(fg_stats_flow(s, hashes[f], 3, "schema", "user", 4), idx[f]);
		}
	CHECK_EQ(named, s->flows_used);
	CHECK_STR(s->flows[0].name, "(other)");
	CHECK_STR(s->flows[idx[0]].name, "schema/user");
	CHECK(idx[0] != 0 && idx[1] != 0 && idx[0] != idx[1]);
	free(s);
}

/* A flow whose schema moved to another level follows it. */
TEST(a_flow_follows_its_level)
{
	struct fg_worker_stats *s = new_stats();
	uint32_t i = fg_stats_flow(s, 12345, 1, "exempt", "", 0);
	CHECK_STR(s->flows[i].name, "exempt");
	CHECK_EQ(fg_stats_flow(s, 12345, 4, "exempt", "", 0), i);
	CHECK_EQ(s->flows[i].level, 4);
	free(s);
}

TEST(read_copies_one_flow)
{
	struct fg_worker_stats *s = new_stats();
	struct fg_flow_snapshot snap;
	CHECK(!fg_stats_flow_read(s, 5, &snap)); /* free */
	uint32_t i = fg_stats_flow(s, 4242, 2, "s", "carol", 5);
	FG_STAT_ADD(s->flows[i].received, 3);
	FG_STAT_ADD(s->flows[i].executing, 1);
	CHECK(fg_stats_flow_read(s, i, &snap));
	CHECK_EQ(snap.hash, 4242);
	CHECK_STR(snap.name, "s/carol");
	CHECK_EQ(snap.level, 2);
	CHECK_EQ(snap.received, 3);
	CHECK_EQ(snap.executing, 1);
	s->flows[i].seq |= 1; /* as while the owner rewrites it */
	CHECK(!fg_stats_flow_read(s, i, &snap));
	free(s);
}

/* The owner gives entries to new flows as fast as it can while another
 * thread reads them: every copy fg_stats_flow_read() returns has the name of
 * the hash it returns.  (A plain read of hash then name, for contrast, is
 * counted: it can mix two names.) */
struct churn {
	struct fg_worker_stats *s;
	bool done;
	unsigned long reads, torn, plain_torn;
};

static void name_for(uint64_t h, char out[24])
{
	snprintf(out, 24, "%016llx%04x", (unsigned long long)h, (unsigned)(h >> 48) ^ 0x5a5a);
}

static void *reader(void *arg)
{
	struct churn *c = arg;
	struct fg_flow_snapshot snap;
	char want[24];
	while (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
		for (uint32_t i = 1; i < FG_FLOW_TABLE_SIZE; i++) {
			if (fg_stats_flow_read(c->s, i, &snap)) {
				c->reads++;
				name_for(snap.hash, want);
				c->torn += strcmp(snap.name + 2, want) != 0;
			}
			uint64_t h = __atomic_load_n(&c->s->flows[i].hash, __ATOMIC_ACQUIRE);
			char plain[FG_FLOW_NAME_MAX];
			for (unsigned k = 0; k < FG_FLOW_NAME_MAX / 8; k++)
				((uint64_t *)plain)[k] = __atomic_load_n(&c->s->flows[i].name_words[k], __ATOMIC_RELAXED);
			name_for(h, want);
			c->plain_torn += h && strncmp(plain + 2, want, 20) != 0;
		}
	}
	return NULL;
}

TEST(readers_never_see_half_a_name)
{
	struct churn c = { new_stats(), false, 0, 0, 0 };
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, reader, &c), 0);
	uint64_t x = 0x3c6ef372fe94f82bull;
	char name[24];
	for (unsigned n = 0; n < 3000000; n++) {
		uint64_t h = xorshift(&x) | 2;
		name_for(h, name);
		fg_stats_flow(c.s, h, 0, "s", name, 20);
	}
	__atomic_store_n(&c.done, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	printf("  %lu checked reads, %lu torn; %lu plain reads mixed two names\n", c.reads, c.torn, c.plain_torn);
	CHECK(c.reads > 0);
	CHECK_EQ(c.torn, 0);
	free(c.s);
}

TEST_MAIN
