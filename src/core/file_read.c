/* SPDX-License-Identifier: Apache-2.0 */
#include "core/file_read.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>

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
