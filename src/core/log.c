/* SPDX-License-Identifier: Apache-2.0
 * Log line formatting: UTC timestamp, level, component, quoted message. */
#include "core/clock.h"
#include "core/decimal.h"
#include "core/log.h"
#include "core/utf8.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum pg_log_level pg_log_min_level = PG_LOG_INFO;
static FILE *log_stream;
static enum pg_log_encoding log_encoding = PG_LOG_LOGFMT;
static int outputs[PG_LOG_MAX_OUTPUTS];     /* fds; none: stderr */
static bool outputs_owned[PG_LOG_MAX_OUTPUTS]; /* opened here, closed by pg_log_close_outputs */
static size_t n_outputs;

static const char *const level_names[] = {"debug", "info", "warn", "error", "none"};

bool pg_log_parse_level(const char *s, enum pg_log_level *out)
{
    for (int i = 0; i <= PG_LOG_OFF; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum pg_log_level)i;
            return true;
        }
    }
    if (strcmp(s, "warning") == 0) {
        *out = PG_LOG_WARN;
        return true;
    }
    return false;
}

void pg_log_set_level(enum pg_log_level lvl)
{
    pg_log_min_level = lvl;
}

void pg_log_set_stream(FILE *f)
{
    log_stream = f;
}

int pg_output_open(const char *path, bool *owned)
{
    *owned = false;
    if (strcmp(path, "stderr") == 0) {
        return STDERR_FILENO;
    }
    if (strcmp(path, "stdout") == 0) {
        return STDOUT_FILENO;
    }
    *owned = true;
    /* 0600: the detailed debug output holds whole profiles, logs hold
     * request metadata; a new file is for the owner alone. */
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
}

void pg_log_close_outputs(void)
{
    for (size_t i = 0; i < n_outputs; i++) {
        if (outputs_owned[i]) {
            close(outputs[i]);
        }
    }
    n_outputs = 0;
}

size_t pg_log_output_fds(int *fds, size_t max)
{
    size_t n = 0;

    if (n_outputs == 0 && max > 0) {
        fds[n++] = STDERR_FILENO;
    }
    for (size_t i = 0; i < n_outputs && n < max; i++) {
        fds[n++] = outputs[i];
    }
    return n;
}

bool pg_log_open_outputs(const char *const *paths, size_t n, char *why, size_t why_size)
{
    int fd[PG_LOG_MAX_OUTPUTS];
    bool own[PG_LOG_MAX_OUTPUTS];

    if (n > PG_LOG_MAX_OUTPUTS) {
        snprintf(why, why_size, "at most %d log outputs", PG_LOG_MAX_OUTPUTS);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        fd[i] = pg_output_open(paths[i], &own[i]);
        if (fd[i] < 0) {
            snprintf(why, why_size, "cannot open log output %s: %s", paths[i], strerror(errno));
            while (i-- > 0) {
                if (own[i]) {
                    close(fd[i]);
                }
            }
            return false;
        }
    }
    pg_log_close_outputs();
    memcpy(outputs, fd, n * sizeof(*fd));
    memcpy(outputs_owned, own, n * sizeof(*own));
    n_outputs = n;
    return true;
}

bool pg_log_parse_encoding(const char *s, enum pg_log_encoding *out)
{
    if (strcmp(s, "logfmt") == 0 || strcmp(s, "console") == 0) {
        *out = PG_LOG_LOGFMT;
        return true;
    }
    if (strcmp(s, "json") == 0) {
        *out = PG_LOG_JSON;
        return true;
    }
    return false;
}

void pg_log_set_encoding(enum pg_log_encoding e)
{
    log_encoding = e;
}

/* Appends @src quoted for @enc: '"' and '\\' escaped, newlines as \n, other
 * control bytes as \xNN (logfmt) or \u00NN (JSON); in JSON a byte that is not
 * valid UTF-8 becomes U+FFFD so the line stays valid JSON. Stops before
 * @cap - 8 so the caller can close the line. */
static size_t quote_into(char *dst, size_t o, size_t cap, const char *src,
                         enum pg_log_encoding enc)
{
    static const char hex[] = "0123456789abcdef";

    for (const unsigned char *p = (const unsigned char *)src; *p != '\0' && o + 8 < cap; p++) {
        if (*p == '"' || *p == '\\') {
            dst[o++] = '\\';
            dst[o++] = (char)*p;
        } else if (*p == '\n') {
            dst[o++] = '\\';
            dst[o++] = 'n';
        } else if (*p < 0x20 || *p == 0x7f) {
            dst[o++] = '\\';
            if (enc == PG_LOG_JSON) {
                dst[o++] = 'u';
                dst[o++] = '0';
                dst[o++] = '0';
            } else {
                dst[o++] = 'x';
            }
            dst[o++] = hex[*p >> 4];
            dst[o++] = hex[*p & 15];
        } else if (*p >= 0x80 && enc == PG_LOG_JSON) {
            size_t n = pg_utf8_seq(p, strnlen((const char *)p, 4));

            if (n == 0) {
                memcpy(dst + o, "\\ufffd", 6);
                o += 6;
            } else if (o + n + 8 < cap) {
                memcpy(dst + o, p, n);
                o += n;
                p += n - 1;
            } else {
                break;
            }
        } else {
            dst[o++] = (char)*p;
        }
    }
    return o;
}

/* Appends @n bytes at *o when they fit before the last 4 bytes of @cap
 * (which the line's end needs); else drops them whole and leaves the text
 * NUL-terminated, as a printf that did not fit would. */
static void put(char *buf, size_t *o, size_t cap, const char *s, size_t n)
{
    if (*o + 4 >= cap) {
        return;
    }
    if (n > 0 && n < cap - 4 - *o) {
        memcpy(buf + *o, s, n);
        *o += n;
    } else {
        buf[*o] = '\0';
    }
}

/* Decimal digits of @v, signed, into @out (at least 21 bytes); returns the length. */
static size_t fmt_ll(char *out, long long v)
{
    size_t o = 0;

    if (v < 0) {
        out[o++] = '-';
    }
    return o + pg_fmt_u64(out + o, v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v);
}

size_t pg_log_timestamp(char *out, const struct timespec *at)
{
    /* Per thread: one gmtime + strftime per second of log lines, not per line. */
    static __thread time_t cached_sec = (time_t)-1;
    static __thread char cached[40];
    static __thread size_t cached_len;
    long ms = at->tv_nsec / 1000000L;

    if (at->tv_sec != cached_sec || cached_len == 0) {
        struct tm tm;

        gmtime_r(&at->tv_sec, &tm);
        cached_len = strftime(cached, sizeof(cached), "%Y-%m-%dT%H:%M:%S", &tm);
        cached_sec = at->tv_sec;
    }
    memcpy(out, cached, cached_len);
    if (ms < 0 || ms > 999) { /* a malformed timespec prints as printf would, cut to fit */
        size_t room = PG_LOG_TS_MAX - cached_len;
        int w = snprintf(out + cached_len, room, ".%03ldZ", ms);

        return cached_len + (w < 0 ? 0 : (size_t)w < room ? (size_t)w : room - 1);
    }
    out[cached_len] = '.';
    out[cached_len + 1] = (char)('0' + ms / 100);
    out[cached_len + 2] = (char)('0' + ms / 10 % 10);
    out[cached_len + 3] = (char)('0' + ms % 10);
    out[cached_len + 4] = 'Z';
    out[cached_len + 5] = '\0';
    return cached_len + 5;
}

/* The pieces of the line's head, appended as one put() would append their
 * concatenation: all or nothing, as the single printf that used to build it. */
struct part {
    const char *p;
    size_t n;
};
#define PART(lit) {(lit), sizeof(lit) - 1}

static void put_parts(char *buf, size_t *o, size_t cap, const struct part *parts, size_t n)
{
    size_t total = 0;

    for (size_t i = 0; i < n; i++) {
        total += parts[i].n;
    }
    if (*o + 4 >= cap) {
        return;
    }
    if (total == 0 || total >= cap - 4 - *o) {
        buf[*o] = '\0';
        return;
    }
    for (size_t i = 0; i < n; i++) {
        memcpy(buf + *o, parts[i].p, parts[i].n);
        *o += parts[i].n;
    }
}

size_t pg_log_format(char *buf, size_t cap, enum pg_log_level lvl, const char *comp,
                     const struct timespec *at, const char *msg, const char *const *keys,
                     const long long *vals, size_t n)
{
    const char *level = level_names[lvl < PG_LOG_OFF ? lvl : PG_LOG_ERROR];
    const bool json = log_encoding == PG_LOG_JSON;
    char ts[PG_LOG_TS_MAX];
    size_t o = 0;
    size_t tl = pg_log_timestamp(ts, at);

    comp = comp != NULL ? comp : "main";
    if (json) {
        const struct part head[] = {PART("{\"ts\":\""), {ts, tl}, PART("\",\"level\":\""),
                                    {level, strlen(level)}, PART("\",\"comp\":\"")};

        put_parts(buf, &o, cap, head, 5);
        o = quote_into(buf, o, cap, comp, PG_LOG_JSON);
        put(buf, &o, cap, "\",\"msg\":\"", 9);
    } else {
        const struct part head[] = {PART("ts="),    {ts, tl},
                                    PART(" level="), {level, strlen(level)},
                                    PART(" comp="),  {comp, strlen(comp)},
                                    PART(" msg=\"")};

        put_parts(buf, &o, cap, head, 7);
    }
    o = quote_into(buf, o, cap, msg, log_encoding);
    buf[o++] = '"';
    for (size_t i = 0; i < n; i++) {
        char field[128];
        size_t kl = strlen(keys[i]);

        if (kl + 28 > sizeof(field)) { /* a key this long is a bug; keep printf's result */
            int w = snprintf(field, sizeof(field), json ? ",\"%s\":%lld" : " %s=%lld", keys[i],
                             vals[i]);

            put(buf, &o, cap, field, w > 0 && (size_t)w < sizeof(field) ? (size_t)w : 0);
            continue;
        }
        if (json) {
            field[0] = ',';
            field[1] = '"';
            memcpy(field + 2, keys[i], kl);
            field[kl + 2] = '"';
            field[kl + 3] = ':';
            kl += 4;
        } else {
            field[0] = ' ';
            memcpy(field + 1, keys[i], kl);
            field[kl + 1] = '=';
            kl += 2;
        }
        kl += fmt_ll(field + kl, vals[i]);
        put(buf, &o, cap, field, kl);
    }
    if (json) {
        buf[o++] = '}';
    }
    buf[o++] = '\n';
    buf[o] = '\0';
    return o;
}

/* Lines longer than PIPE_BUF are not written atomically to a pipe: two threads' long
 * lines would interleave mid-line, so those take this lock (short lines need none). */
static pthread_mutex_t long_line_lock = PTHREAD_MUTEX_INITIALIZER;

/* One write per line where it fits: whole lines, not interleaved with the
 * debug exporter's writer on the same fd. A descriptor someone made non-blocking
 * (a shared pipe) is waited for briefly rather than leaving half a line behind. */
static void put_line(int fd, const char *line, size_t n)
{
    int waits = 0;

    while (n > 0) {
        ssize_t w = write(fd, line, n);

        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && waits++ < 50) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};

            (void)poll(&pfd, 1, 20);
            continue;
        }
        if (w <= 0) {
            return; /* nowhere left to report it */
        }
        line += w;
        n -= (size_t)w;
    }
}

void pg_log_write(enum pg_log_level lvl, const char *comp, const char *fmt, ...)
{
    char msg[2048];
    char line[4400];
    struct timespec now;
    va_list ap;
    size_t n;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    now = pg_real_ts();
    n = pg_log_format(line, sizeof(line), lvl, comp, &now, msg, NULL, NULL, 0);
    if (log_stream != NULL) {
        flockfile(log_stream);
        fwrite(line, 1, n, log_stream);
        fflush(log_stream);
        funlockfile(log_stream);
        return;
    }
    bool long_line = n > PIPE_BUF;

    if (long_line) {
        pthread_mutex_lock(&long_line_lock);
    }
    if (n_outputs == 0) {
        put_line(STDERR_FILENO, line, n);
    }
    for (size_t i = 0; i < n_outputs; i++) {
        put_line(outputs[i], line, n);
    }
    if (long_line) {
        pthread_mutex_unlock(&long_line_lock);
    }
}

bool pg_log_ratelimit_ok(struct pg_log_ratelimit *rl, unsigned long *suppressed_out)
{
    double t = pg_mono_s();
    if (rl->last == 0) {
        rl->last = t;
    }
    rl->tokens += (t - rl->last) * rl->per_sec;
    if (rl->tokens > rl->burst) {
        rl->tokens = rl->burst;
    }
    rl->last = t;
    if (rl->tokens >= 1.0) {
        rl->tokens -= 1.0;
        if (suppressed_out != NULL) {
            *suppressed_out = rl->suppressed;
        }
        rl->suppressed = 0;
        return true;
    }
    rl->suppressed++;
    return false;
}

void pg_log_libevent(int severity, const char *msg)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static struct pg_log_ratelimit rl = PG_LOG_RATELIMIT_INIT(5.0, 20);
    enum pg_log_level lvl = severity >= 3   ? PG_LOG_ERROR
                            : severity == 2 ? PG_LOG_WARN
                            : severity == 1 ? PG_LOG_INFO
                                            : PG_LOG_DEBUG;
    unsigned long suppressed = 0;
    bool ok;

    if (lvl < pg_log_min_level) {
        return;
    }
    pthread_mutex_lock(&mu);
    ok = pg_log_ratelimit_ok(&rl, &suppressed);
    pthread_mutex_unlock(&mu);
    if (!ok) {
        return;
    }
    if (suppressed > 0) {
        pg_log_write(lvl, "libevent", "%s (%lu similar line(s) suppressed)", msg, suppressed);
    } else {
        pg_log_write(lvl, "libevent", "%s", msg);
    }
}
