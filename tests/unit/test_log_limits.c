/* SPDX-License-Identifier: Apache-2.0
 * Output files are created for the owner only (0600), and libevent's own log
 * callback goes through a rate limiter: a flood becomes a bounded number of
 * lines carrying the count of those suppressed. Lines longer than a pipe's
 * atomic write size from several threads stay whole. */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
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

/* Each writer logs lines of one letter, each longer than PIPE_BUF; a line that
 * holds two letters was interleaved with another thread's. */
#define LONG_WRITERS 4
#define LONG_LINES 60

static void *long_writer(void *arg)
{
    char msg[2000];

    /* letter, \x01, letter, ...: each control byte is quoted as 4 bytes, so the line
     * reaches the formatter's cap (~4.4 KiB), past PIPE_BUF. */
    for (size_t i = 0; i + 1 < sizeof(msg); i++) {
        msg[i] = i % 2 == 0 ? (char)('a' + (int)(long)arg) : '\x01';
    }
    msg[sizeof(msg) - 1] = '\0';
    for (int i = 0; i < LONG_LINES; i++) {
        pg_log_write(PG_LOG_WARN, "test", "%s", msg);
    }
    return NULL;
}

struct pipe_sink {
    int fd;
    char *buf;
    size_t len, cap;
};

static void *pipe_reader(void *arg)
{
    struct pipe_sink *s = arg;
    ssize_t r;

    while (s->len < s->cap && (r = read(s->fd, s->buf + s->len, s->cap - s->len)) > 0) {
        s->len += (size_t)r;
    }
    return NULL;
}

PG_TEST(test_long_lines_whole_across_threads)
{
    int p[2], saved = dup(STDERR_FILENO);
    pthread_t w[LONG_WRITERS], rd;
    struct pipe_sink sink = {.cap = 4u << 20};
    int whole = 0, mixed = 0;

    CHECK(pipe(p) == 0 && saved >= 0);
    sink.fd = p[0];
    sink.buf = malloc(sink.cap + 1);
    CHECK(sink.buf != NULL);
    pthread_create(&rd, NULL, pipe_reader, &sink);
    dup2(p[1], STDERR_FILENO);
    close(p[1]);
    for (long i = 0; i < LONG_WRITERS; i++) {
        pthread_create(&w[i], NULL, long_writer, (void *)i);
    }
    for (int i = 0; i < LONG_WRITERS; i++) {
        pthread_join(w[i], NULL);
    }
    dup2(saved, STDERR_FILENO); /* the pipe's last writer closes: the reader sees EOF */
    close(saved);
    pthread_join(rd, NULL);
    sink.buf[sink.len] = '\0';
    for (char *line = sink.buf, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
        char *m = strstr(line, "msg=\"");
        int letters = 0;

        *nl = '\0';
        if (m == NULL || strncmp(line, "ts=", 3) != 0) {
            mixed++;
            continue;
        }
        for (int c = 'a'; c < 'a' + LONG_WRITERS; c++) {
            letters += strchr(m, c) != NULL;
        }
        if (letters == 1 && strlen(line) > PIPE_BUF) {
            whole++;
        } else {
            mixed++;
        }
    }
    CHECK_INT(mixed, 0);
    CHECK_INT(whole, LONG_WRITERS * LONG_LINES);
    free(sink.buf);
    close(p[0]);
}

PG_TEST_MAIN(PG_CASE(test_output_file_mode), PG_CASE(test_libevent_flood_limited),
             PG_CASE(test_long_lines_whole_across_threads))
