/* SPDX-License-Identifier: Apache-2.0
 * Reading small files whole: secrets, tokens, namespace files. Every read has
 * a cap; a file over it is an error, never silently cut. Thread-safe. */
#ifndef PG_CORE_FILE_READ_H
#define PG_CORE_FILE_READ_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
