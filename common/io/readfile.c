/* SPDX-License-Identifier: Apache-2.0 */
/* readfile — whole input files, bounded; see readfile.h. */
#include "readfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fg_read_file(const char *path, char **buf, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!f)
		return -errno;
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap + 1);
	int rc = b ? 0 : -ENOMEM;
	while (!rc) {
		n += fread(b + n, 1, cap - n, f);
		if (n < cap) {
			if (ferror(f))
				rc = -EIO;
			break;
		}
		if (cap == FG_INPUT_FILE_MAX) { /* full: one byte more is too many */
			if (fgetc(f) != EOF)
				rc = -EFBIG;
			break;
		}
		size_t next = cap * 2 > FG_INPUT_FILE_MAX ? FG_INPUT_FILE_MAX : cap * 2;
		char *nb = realloc(b, next + 1);
		if (!nb)
			rc = -ENOMEM;
		else
			b = nb, cap = next;
	}
	if (f != stdin)
		fclose(f);
	if (rc) {
		free(b);
		return rc;
	}
	b[n] = 0;
	*buf = b;
	*len = n;
	return 0;
}

const char *fg_read_file_strerror(int err)
{
	static char msg[64];
	if (err == -EFBIG) {
		snprintf(msg, sizeof(msg), "larger than %u MiB", FG_INPUT_FILE_MAX >> 20);
		return msg;
	}
	return strerror(-err);
}
