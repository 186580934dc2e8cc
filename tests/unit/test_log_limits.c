/* SPDX-License-Identifier: Apache-2.0
 * Output files are created for the owner only (0600), and libevent's own log
 * callback goes through a rate limiter: a flood becomes a bounded number of
 * lines carrying the count of those suppressed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "pg_test.h"

PG_TEST(test_output_file_mode)
{
    char dir[] = "/tmp/pg_test_log.XXXXXX";
    char path[64];
    bool owned = false;
    struct stat sb;
    mode_t old = umask(0);
    int fd;

    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/out.log", dir);
    fd = pg_output_open(path, &owned);
    umask(old);
    CHECK(fd >= 0 && owned);
    CHECK(stat(path, &sb) == 0);
    CHECK_INT(sb.st_mode & 0777, 0600);
    if (fd >= 0) {
        close(fd);
    }
    unlink(path);
    rmdir(dir);
}

PG_TEST(test_libevent_flood_limited)
{
    FILE *f = tmpfile();
    char line[512];
    int lines = 0, with_count = 0;

    CHECK(f != NULL);
    if (f == NULL) {
        return;
    }
    pg_log_set_stream(f);
    for (int i = 0; i < 10000; i++) {
        pg_log_libevent(2, "Error from accept() call: Too many open files");
    }
    /* After the burst the next allowed line reports what was dropped. */
    usleep(300000);
    pg_log_libevent(2, "Error from accept() call: Too many open files");
    pg_log_set_stream(NULL);
    rewind(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        lines++;
        with_count += strstr(line, "similar line(s) suppressed") != NULL;
        CHECK(strstr(line, "libevent") != NULL);
    }
    fclose(f);
    CHECK(lines >= 2 && lines <= 25);
    CHECK_INT(with_count, 1);
}

PG_TEST_MAIN(PG_CASE(test_output_file_mode), PG_CASE(test_libevent_flood_limited))
