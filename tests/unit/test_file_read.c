/* SPDX-License-Identifier: Apache-2.0
 * core/file_read.c: capped small-file reads and their trim modes. */
#include "pg_test.h"

#include <errno.h>
#include <stdbool.h>
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

PG_TEST_MAIN(PG_CASE(test_trim_table), PG_CASE(test_cap_is_an_error_not_a_cut),
             PG_CASE(test_missing_file))
