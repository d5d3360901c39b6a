/* SPDX-License-Identifier: Apache-2.0 */
/* jsonfield — typed fields with their path in every error; see jsonfield.h. */
#include "jsonfield.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "duration.h"
#include "reason.h"

int fg_jf_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = fg_vreason(-EINVAL, err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

int fg_jf_duration(json_t *obj, const char *key, int64_t dflt, int64_t *out, const char *path, char *err,
		   size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	if (!v) {
		*out = dflt;
		return 0;
	}
	if (!json_is_string(v) || fg_duration_parse(json_string_value(v), json_string_length(v), out))
		return fg_jf_fail(err, errlen, "%s%s: must be a duration string such as \"1s\" or \"250ms\"", path, key);
	return 0;
}

int fg_jf_int(json_t *obj, const char *key, int64_t dflt, int64_t lo, int64_t hi, int64_t *out, const char *path,
	      char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	if (!v) {
		*out = dflt;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return fg_jf_fail(err, errlen, "%s%s: must be an integer in [%lld, %lld]", path, key, (long long)lo,
				  (long long)hi);
	*out = json_integer_value(v);
	return 0;
}

int fg_jf_number(json_t *obj, const char *key, double dflt, double lo, double hi, double *out, const char *path,
		 char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	if (!v) {
		*out = dflt;
		return 0;
	}
	double x = json_number_value(v);
	if (!json_is_number(v) || !isfinite(x) || x < lo || x > hi)
		return fg_jf_fail(err, errlen, "%s%s: must be a number in [%g, %g]", path, key, lo, hi);
	*out = x;
	return 0;
}

int fg_jf_string(json_t *obj, const char *key, bool required, const char *dflt, size_t maxlen, const char **out,
		 const char *path, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	if (!v) {
		*out = dflt;
		return required ? fg_jf_fail(err, errlen, "%s%s: required", path, key) : 0;
	}
	if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= maxlen ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return fg_jf_fail(err, errlen, "%s%s: must be a string of 1 to %zu characters", path, key, maxlen - 1);
	*out = json_string_value(v);
	return 0;
}

int fg_jf_known_keys(json_t *obj, const char *const *known, const char *path, char *err, size_t errlen)
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v) {
		size_t i = 0;
		while (known[i] && strcmp(known[i], key))
			i++;
		if (!known[i])
			return fg_jf_fail(err, errlen, "%s%s: unknown field", path, key);
	}
	return 0;
}
