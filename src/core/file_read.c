/* SPDX-License-Identifier: Apache-2.0 */
#include "core/file_read.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/vec.h"

bool pg_file_read_small(const char *path, char *out, size_t cap, enum pg_trim trim, size_t *len)
{
    FILE *f;
    size_t n;
    bool more, failed;

    if (cap == 0) {
        errno = EINVAL;
        return false;
    }
    out[0] = '\0';
    if ((f = fopen(path, "r")) == NULL) {
        return false;
    }
    n = fread(out, 1, cap - 1, f);
    /* One byte past the cap tells "exactly full" from "too large". */
    more = n == cap - 1 && fgetc(f) != EOF;
    failed = ferror(f) != 0;
    fclose(f);
    if (failed || more) {
        out[0] = '\0';
        errno = failed ? EIO : EFBIG;
        return false;
    }
    while (n > 0 && ((trim == PG_TRIM_EOL && (out[n - 1] == '\n' || out[n - 1] == '\r')) ||
                     (trim == PG_TRIM_SPACE && isspace((unsigned char)out[n - 1])))) {
        n--;
    }
    out[n] = '\0';
    if (len != NULL) {
        *len = n;
    }
    return true;
}

char *pg_file_read_all(const char *path, size_t max, size_t *len, struct stat *sb)
{
    FILE *f = fopen(path, "rb");
    struct stat own;
    char *buf;
    size_t cap, n = 0;
    int e = 0;

    *len = 0;
    if (f == NULL) {
        return NULL;
    }
    sb = sb != NULL ? sb : &own;
    if (fstat(fileno(f), sb) != 0) {
        e = errno;
        fclose(f);
        errno = e;
        return NULL;
    }
    if (max > SIZE_MAX - 2) {
        max = SIZE_MAX - 2;
    }
    /* Room for the whole file, one byte more to notice that it grew past
     * @max, and the NUL; files without a size (/proc, pipes) start at 4 KiB
     * and double. */
    cap = sb->st_size > 0 && (uint64_t)sb->st_size <= (uint64_t)max ? (size_t)sb->st_size + 2
                                                                       : 4096;
    cap = cap < max + 2 ? cap : max + 2;
    if ((buf = malloc(cap)) == NULL) {
        fclose(f);
        errno = ENOMEM;
        return NULL;
    }
    for (;;) {
        size_t want, got;

        /* Never past max + 2: a full buffer then holds max + 1 bytes. */
        if (n + 1 == cap && !PG_VEC_RESERVE(NULL, buf, cap, cap + 1, 0, max + 2)) {
            e = ENOMEM;
            break;
        }
        want = cap - 1 - n;
        got = fread(buf + n, 1, want, f);
        n += got;
        if (n > max) {
            e = EFBIG;
            break;
        }
        if (got < want) {
            e = ferror(f) ? EIO : 0;
            break;
        }
    }
    fclose(f);
    if (e != 0) {
        free(buf);
        errno = e;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}
