/* SPDX-License-Identifier: Apache-2.0
 * A tiny table-driven test harness: PG_TEST(name) defines a case, the
 * CHECK macros record failures and go on, PG_TEST_MAIN() runs every case and
 * ends with the line "N passed, N failed". */
#ifndef PG_TEST_H
#define PG_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pg_test_case {
    const char *name;
    void (*fn)(void);
};

extern int pg_test_failures_;
int pg_test_failures_;

#define PG_TEST(name) static void name(void)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);             \
            pg_test_failures_++;                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "  %s:%d: %s == %lld, want %lld\n", __FILE__, __LINE__, #a, a_, b_);   \
            pg_test_failures_++;                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) {                                     \
            fprintf(stderr, "  %s:%d: %s == \"%s\", want \"%s\"\n", __FILE__, __LINE__, #a,        \
                    a_ ? a_ : "(null)", b_ ? b_ : "(null)");                                       \
            pg_test_failures_++;                                                                   \
        }                                                                                          \
    } while (0)

#define PG_TEST_MAIN(...)                                                                          \
    int main(void)                                                                                 \
    {                                                                                              \
        static const struct pg_test_case cases_[] = {__VA_ARGS__};                                 \
        int passed_ = 0, failed_ = 0;                                                              \
        for (size_t i_ = 0; i_ < sizeof(cases_) / sizeof(cases_[0]); i_++) {                      \
            int before_ = pg_test_failures_;                                                       \
            cases_[i_].fn();                                                                       \
            if (pg_test_failures_ == before_) {                                                    \
                passed_++;                                                                         \
                fprintf(stderr, "ok   %s\n", cases_[i_].name);                                     \
            } else {                                                                               \
                failed_++;                                                                         \
                fprintf(stderr, "FAIL %s\n", cases_[i_].name);                                     \
            }                                                                                      \
        }                                                                                          \
        printf("%d passed, %d failed\n", passed_, failed_);                                        \
        return failed_ ? 1 : 0;                                                                    \
    }

#define PG_CASE(fn) { #fn, fn }

/* Reads a whole file into malloc'd memory; NULL on error. */
static inline unsigned char *pg_test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    long n;

    *len = 0;
    if (f == NULL) {
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n + 1);
        if (buf != NULL && fread(buf, 1, (size_t)n, f) == (size_t)n) {
            *len = (size_t)n;
            buf[n] = 0;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

#endif
