/* SPDX-License-Identifier: Apache-2.0 */
/* duration — Go-style duration parsing and formatting. */
#include "duration.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int64_t unit_ns(const char *u, size_t n)
{
	static const struct { const char *name; int64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "\xc2\xb5s", 1000 }, { "ms", 1000000 },
		{ "s", 1000000000LL }, { "m", 60000000000LL }, { "h", 3600000000000LL },
	};
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strlen(units[i].name) == n && !memcmp(units[i].name, u, n))
			return units[i].ns;
	return 0;
}

int fg_duration_parse(const char *s, size_t len, int64_t *out)
{
	size_t i = 0;
	int neg = 0;
	if (i < len && (s[i] == '-' || s[i] == '+'))
		neg = s[i++] == '-';
	if (i == len)
		return -EINVAL;
	if (len - i == 1 && s[i] == '0') {
		*out = 0;
		return 0;
	}
	long double total = 0;
	while (i < len) {
		size_t start = i;
		long double v = 0, scale = 1;
		int digits = 0, dot = 0;
		for (; i < len && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.'); i++) {
			if (s[i] == '.') {
				if (dot++)
					return -EINVAL;
				continue;
			}
			digits++;
			if (dot)
				v += (s[i] - '0') * (scale /= 10);
			else
				v = v * 10 + (s[i] - '0');
		}
		if (!digits || i == start)
			return -EINVAL;
		size_t ustart = i;
		while (i < len && !((s[i] >= '0' && s[i] <= '9') || s[i] == '.'))
			i++;
		int64_t u = unit_ns(s + ustart, i - ustart);
		if (!u)
			return -EINVAL;
		total += v * u;
		if (total > (long double)INT64_MAX)
			return -ERANGE;
	}
	int64_t ns = (int64_t)llroundl(total);
	*out = neg ? -ns : ns;
	return 0;
}

const char *fg_duration_format(int64_t ns, char *buf, size_t cap)
{
	const char *sign = ns < 0 ? "-" : "";
	uint64_t a = ns < 0 ? (uint64_t)-(ns + 1) + 1 : (uint64_t)ns;
	if (a == 0)
		snprintf(buf, cap, "0s");
	else if (a % 1000000000ull == 0)
		snprintf(buf, cap, "%s%llus", sign, (unsigned long long)(a / 1000000000ull));
	else if (a >= 1000000000ull)
		snprintf(buf, cap, "%s%gs", sign, (double)a / 1e9);
	else if (a % 1000000ull == 0 || a >= 1000000ull)
		snprintf(buf, cap, "%s%gms", sign, (double)a / 1e6);
	else if (a >= 1000ull)
		snprintf(buf, cap, "%s%gus", sign, (double)a / 1e3);
	else
		snprintf(buf, cap, "%s%lluns", sign, (unsigned long long)a);
	return buf;
}
