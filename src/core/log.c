/* SPDX-License-Identifier: Apache-2.0
 * Log line formatting: UTC timestamp, level, component, quoted message. */
#include "core/log.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

enum pg_log_level pg_log_min_level = PG_LOG_INFO;
static FILE *log_stream;

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

/* Quotes the message: '"' and '\\' are escaped, control bytes become \xNN so
 * that request bytes cannot forge log lines. */
static size_t quote_into(char *dst, size_t cap, const char *src)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;

    for (const unsigned char *p = (const unsigned char *)src; *p != '\0' && o + 5 < cap; p++) {
        if (*p == '"' || *p == '\\') {
            dst[o++] = '\\';
            dst[o++] = (char)*p;
        } else if (*p == '\n') {
            dst[o++] = '\\';
            dst[o++] = 'n';
        } else if (*p < 0x20 || *p == 0x7f) {
            dst[o++] = '\\';
            dst[o++] = 'x';
            dst[o++] = hex[*p >> 4];
            dst[o++] = hex[*p & 15];
        } else {
            dst[o++] = (char)*p;
        }
    }
    dst[o] = '\0';
    return o;
}

void pg_log_write(enum pg_log_level lvl, const char *comp, const char *fmt, ...)
{
    char msg[2048];
    char quoted[4096];
    char ts[40];
    struct timespec now;
    struct tm tm;
    va_list ap;
    FILE *out = log_stream ? log_stream : stderr;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    quote_into(quoted, sizeof(quoted), msg);

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    flockfile(out);
    fprintf(out, "ts=%s.%03ldZ level=%s comp=%s msg=\"%s\"\n", ts, now.tv_nsec / 1000000L,
            level_names[lvl < PG_LOG_OFF ? lvl : PG_LOG_ERROR], comp ? comp : "main", quoted);
    fflush(out);
    funlockfile(out);
}

bool pg_log_ratelimit_ok(struct pg_log_ratelimit *rl, unsigned long *suppressed_out)
{
    struct timespec now;
    double t;

    clock_gettime(CLOCK_MONOTONIC, &now);
    t = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
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
