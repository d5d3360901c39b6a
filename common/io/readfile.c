/* SPDX-License-Identifier: Apache-2.0 */
/* readfile — whole input files, bounded; see readfile.h. */
#include "readfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int fg_read_file(const char *path, char **buf, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!f)
		return -errno;
	struct stat st;
	if (f != stdin && !fstat(fileno(f), &st) && S_ISDIR(st.st_mode)) {
		fclose(f);
		return -EISDIR; /* fopen takes a directory; reading it fails with EIO */
	}
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
	if (err == -EISDIR)
		return "is a directory (give the files one by one: -f names one file)";
	return strerror(-err);
}

bool fg_input_empty(const char *s)
{
	for (const char *line = s; *line;) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);
		size_t k = strspn(line, " \t\r");
		bool blank = k == n || line[k] == '#' ||
			     (n - k >= 3 && !strncmp(line + k, "---", 3) && strspn(line + k + 3, " \t\r") == n - k - 3);
		if (!blank)
			return false;
		line = end ? end + 1 : line + n;
	}
	return true;
}
