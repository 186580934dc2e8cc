/* SPDX-License-Identifier: Apache-2.0
 * Reading files whole: secrets, tokens, namespace files into a caller's
 * buffer; config, credential and target files onto the heap. Every read has
 * a cap; a file over it is an error, never silently cut. Thread-safe. */
#ifndef PG_CORE_FILE_READ_H
#define PG_CORE_FILE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* What is taken off the end of what was read. */
enum pg_trim {
    PG_TRIM_NONE = 0,
    PG_TRIM_EOL,   /* trailing CR and LF: a secret may end in other spaces */
    PG_TRIM_SPACE, /* trailing whitespace (isspace) */
};

/* Reads @path into @out (NUL-terminated, at most @cap - 1 bytes) and trims
 * its end by @trim; @len (may be NULL) gets the length left. False with errno
 * set when the file cannot be opened or read, or EFBIG when it holds more
 * than @cap - 1 bytes (@out is then ""). */
bool pg_file_read_small(const char *path, char *out, size_t cap, enum pg_trim trim, size_t *len);

/* Reads all of @path into a malloc'd, NUL-terminated buffer (the caller
 * frees it) when it holds at most @max bytes; @len gets the length. @sb (may
 * be NULL) gets fstat() of the file that was read, for change detection
 * without a race. NULL with errno set when it cannot be opened or read,
 * ENOMEM, or EFBIG when it holds more than @max bytes. Sized from fstat, so a
 * regular file is read into one allocation (no stray copies of a secret). */
char *pg_file_read_all(const char *path, size_t max, size_t *len, struct stat *sb);

#endif
