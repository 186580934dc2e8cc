/* SPDX-License-Identifier: Apache-2.0
 * A tiny table-driven test harness: PG_TEST(name) defines a case, the
 * CHECK macros record failures and go on, PG_REQUIRE records a failure and
 * ends the case (for set-up that later steps depend on), PG_SKIP_ALL ends the
 * executable with ctest's skip code when a peer is missing, PG_TEST_MAIN()
 * runs every case and ends with the line "N passed, N failed". */
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

/* Run by PG_TEST_MAIN after every case, then reset: a case that may end
 * early through PG_REQUIRE sets it to release what it started (a child
 * process, a thread) so the next case starts clean. */
extern void (*pg_test_after_case_)(void);
void (*pg_test_after_case_)(void);

/* ctest's SKIP_RETURN_CODE for tests that need a peer (Node, a tool). */
#define PG_TEST_SKIP_CODE 77

#define PG_TEST(name) static void name(void)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);             \
            pg_test_failures_++;                                                                   \
        }                                                                                          \
    } while (0)

/* Like CHECK, but a failure ends the current case: used where set-up failed
 * and the steps after it would only crash or report noise. Only in the
 * case's own body (it returns from the enclosing void function). */
#define PG_REQUIRE(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "  %s:%d: REQUIRE(%s) failed; case ends here\n", __FILE__, __LINE__,   \
                    #cond);                                                                        \
            pg_test_failures_++;                                                                   \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* Ends the whole executable as skipped (ctest shows "Not Run" with the
 * reason) when an outside peer the tests need is absent. */
#define PG_SKIP_ALL(...)                                                                           \
    do {                                                                                           \
        fprintf(stderr, "SKIP: ");                                                                 \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        exit(PG_TEST_SKIP_CODE);                                                                   \
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
            if (pg_test_after_case_ != NULL) {                                                     \
                pg_test_after_case_();                                                             \
                pg_test_after_case_ = NULL;                                                        \
            }                                                                                      \
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
