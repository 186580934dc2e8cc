/* SPDX-License-Identifier: Apache-2.0
 * core/file_read.c: capped small-file reads and their trim modes, and
 * capped whole-file reads onto the heap. */
#include "pg_test.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file_read.h"

/* Writes @len bytes to a fresh temp file; its path goes to @path. */
static void write_tmp(char *path, size_t size, const char *data, size_t len)
{
    snprintf(path, size, "/tmp/pg_test_file_read_XXXXXX");
    int fd = mkstemp(path);
    if (fd >= 0) {
        if (write(fd, data, len) != (ssize_t)len) {
            path[0] = '\0';
        }
        close(fd);
    }
}

PG_TEST(test_trim_table)
{
    static const struct {
        const char *content;
        enum pg_trim trim;
        const char *want;
    } cases[] = {
        {"token\n", PG_TRIM_EOL, "token"},
        {"token\r\n\r\n", PG_TRIM_EOL, "token"},
        {"token \t\n", PG_TRIM_EOL, "token \t"}, /* a secret may end in a space */
        {"token \t\r\n ", PG_TRIM_SPACE, "token"},
        {"  lead\n", PG_TRIM_SPACE, "  lead"}, /* only the end is trimmed */
        {"a\nb\n", PG_TRIM_NONE, "a\nb\n"},
        {"", PG_TRIM_EOL, ""},
        {"\n\n", PG_TRIM_SPACE, ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[64], out[32];
        size_t len = 999;

        write_tmp(path, sizeof(path), cases[i].content, strlen(cases[i].content));
        PG_REQUIRE(path[0] != '\0');
        CHECK(pg_file_read_small(path, out, sizeof(out), cases[i].trim, &len));
        CHECK_STR(out, cases[i].want);
        CHECK_INT(len, strlen(cases[i].want));
        unlink(path);
    }
}

PG_TEST(test_cap_is_an_error_not_a_cut)
{
    char path[64], out[8];

    write_tmp(path, sizeof(path), "1234567", 7); /* exactly cap - 1: fits */
    PG_REQUIRE(path[0] != '\0');
    CHECK(pg_file_read_small(path, out, sizeof(out), PG_TRIM_NONE, NULL));
    CHECK_STR(out, "1234567");
    unlink(path);

    write_tmp(path, sizeof(path), "12345678", 8); /* one byte over */
    PG_REQUIRE(path[0] != '\0');
    errno = 0;
    CHECK(!pg_file_read_small(path, out, sizeof(out), PG_TRIM_NONE, NULL));
    CHECK_INT(errno, EFBIG);
    CHECK_STR(out, "");
    unlink(path);
}

PG_TEST(test_missing_file)
{
    char out[8] = "x";

    errno = 0;
    CHECK(!pg_file_read_small("/nonexistent/pg_test_file_read", out, sizeof(out), PG_TRIM_EOL,
                              NULL));
    CHECK_INT(errno, ENOENT);
    CHECK_STR(out, "");
}

PG_TEST(test_read_all_table)
{
    static const struct {
        size_t len, max;
        bool ok;
    } cases[] = {
        {0, 10, true}, {10, 10, true}, {11, 10, false}, {5000, 100000, true},
        {100000, 100000, true}, {100001, 100000, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[64];
        char *data = malloc(cases[i].len + 1);
        size_t len = 999;
        struct stat sb;

        PG_REQUIRE(data != NULL);
        for (size_t k = 0; k < cases[i].len; k++) {
            data[k] = (char)('a' + k % 26);
        }
        write_tmp(path, sizeof(path), data, cases[i].len);
        PG_REQUIRE(path[0] != '\0');
        errno = 0;
        char *got = pg_file_read_all(path, cases[i].max, &len, &sb);
        CHECK_INT(got != NULL, cases[i].ok);
        if (got != NULL) {
            CHECK_INT(len, cases[i].len);
            CHECK(memcmp(got, data, len) == 0);
            CHECK(got[len] == '\0');
            CHECK_INT(sb.st_size, cases[i].len);
        } else {
            CHECK_INT(errno, EFBIG);
        }
        free(got);
        free(data);
        unlink(path);
    }
}

PG_TEST(test_read_all_without_a_size)
{
    size_t len = 0;
    /* /proc files report size 0: read until EOF, still capped. */
    char *got = pg_file_read_all("/proc/self/status", 1 << 20, &len, NULL);

    PG_REQUIRE(got != NULL);
    CHECK(len > 0 && strlen(got) == len);
    CHECK(strncmp(got, "Name:", 5) == 0);
    free(got);
    errno = 0;
    CHECK(pg_file_read_all("/proc/self/status", 8, &len, NULL) == NULL);
    CHECK_INT(errno, EFBIG);
    errno = 0;
    CHECK(pg_file_read_all("/nonexistent/pg_test_file_read", 8, &len, NULL) == NULL);
    CHECK_INT(errno, ENOENT);
}

PG_TEST_MAIN(PG_CASE(test_trim_table), PG_CASE(test_cap_is_an_error_not_a_cut),
             PG_CASE(test_missing_file), PG_CASE(test_read_all_table),
             PG_CASE(test_read_all_without_a_size))
