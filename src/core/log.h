/* SPDX-License-Identifier: Apache-2.0
 * Leveled logging: one line per event on stderr (or a file), `key=value`
 * (logfmt, the default) or one JSON object (`telemetry.logs.encoding: json`).
 * Request-controlled text must go through %s arguments, never the format. */
#ifndef PG_CORE_LOG_H
#define PG_CORE_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

enum pg_log_level { PG_LOG_DEBUG = 0, PG_LOG_INFO, PG_LOG_WARN, PG_LOG_ERROR, PG_LOG_OFF };

extern enum pg_log_level pg_log_min_level;

/* Parses "debug", "info", "warn", "error", "none"; returns false if unknown. */
bool pg_log_parse_level(const char *s, enum pg_log_level *out);
void pg_log_set_level(enum pg_log_level lvl);
/* Where log lines go; NULL means stderr. Borrowed, not closed. Overrides
 * the outputs below (for tests). */
void pg_log_set_stream(FILE *f);

/* Opens an output named as `output_paths` name them: "stderr" and "stdout"
 * are the process's own (*@owned false), anything else a file opened for
 * append (*@owned true: the caller closes it). The fd, or -1 with errno. */
int pg_output_open(const char *path, bool *owned);

/* `telemetry.logs.output_paths`: "stderr", "stdout" or files (appended),
 * at most PG_LOG_MAX_OUTPUTS; every line goes to each. On failure nothing
 * changes and @why says which path failed. Call before threads start. */
#define PG_LOG_MAX_OUTPUTS 4
bool pg_log_open_outputs(const char *const *paths, size_t n, char *why, size_t why_size);
/* Back to stderr; closes the files opened above. At exit, after threads end. */
void pg_log_close_outputs(void);
/* The descriptors log lines go to (stderr when no outputs are set), for
 * writers that print log-shaped lines themselves (the debug exporter with
 * use_internal_logger, as the collector's goes through its logger).
 * Returns how many, at most @max. */
size_t pg_log_output_fds(int *fds, size_t max);

enum pg_log_encoding { PG_LOG_LOGFMT = 0, PG_LOG_JSON };
/* "logfmt" or "console" (the collector's default: key=value lines here),
 * "json"; false if unknown. */
bool pg_log_parse_encoding(const char *s, enum pg_log_encoding *out);
void pg_log_set_encoding(enum pg_log_encoding e);

/* One line in the configured encoding into @buf, with integer fields after
 * the message (for components that print log-shaped lines of their own, as
 * the debug exporter's summary). Control bytes and invalid UTF-8 are escaped
 * so request bytes cannot forge lines. Returns the length (at most @cap - 1;
 * a line that does not fit is cut and still ends with a newline). */
size_t pg_log_format(char *buf, size_t cap, enum pg_log_level lvl, const char *comp,
                     const struct timespec *at, const char *msg, const char *const *keys,
                     const long long *vals, size_t n);

/* The line's timestamp, "2026-11-30T10:00:00.123Z" (UTC, milliseconds), into
 * @out (PG_LOG_TS_MAX bytes), NUL-terminated; returns its length. The
 * seconds part is formatted once per second per thread. */
#define PG_LOG_TS_MAX 48
size_t pg_log_timestamp(char *out, const struct timespec *at);

/* @comp names the component instance, e.g. "receiver/pprof"; @msg is a
 * printf format for the message; the line reads
 *   ts=2026-11-30T10:00:00.123Z level=warn comp=receiver/pprof msg="..."
 * or {"ts":"2026-11-30T10:00:00.123Z","level":"warn","comp":"receiver/pprof","msg":"..."} */
void pg_log_write(enum pg_log_level lvl, const char *comp, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define PG_LOG_(lvl, comp, ...)                                                                    \
    do {                                                                                           \
        if ((lvl) >= pg_log_min_level) {                                                           \
            pg_log_write((lvl), (comp), __VA_ARGS__);                                              \
        }                                                                                          \
    } while (0)

#define pg_log_debug(comp, ...) PG_LOG_(PG_LOG_DEBUG, comp, __VA_ARGS__)
#define pg_log_info(comp, ...)  PG_LOG_(PG_LOG_INFO, comp, __VA_ARGS__)
#define pg_log_warn(comp, ...)  PG_LOG_(PG_LOG_WARN, comp, __VA_ARGS__)
#define pg_log_error(comp, ...) PG_LOG_(PG_LOG_ERROR, comp, __VA_ARGS__)

/* A token bucket for hot-path warnings: at most @burst lines, refilled at
 * @per_sec; pg_log_ratelimit_ok() also reports how many were suppressed. */
struct pg_log_ratelimit {
    double tokens;
    double per_sec;
    double burst;
    double last;
    unsigned long suppressed;
};
#define PG_LOG_RATELIMIT_INIT(per_sec, burst) { (burst), (per_sec), (burst), 0, 0 }
bool pg_log_ratelimit_ok(struct pg_log_ratelimit *rl, unsigned long *suppressed_out);
/* ", N similar lines suppressed" in a format, nothing when N is 0:
 *   pg_log_info(c, "refused (peer=%s" PG_LOG_SUPPRESSED_FMT ")", peer, PG_LOG_SUPPRESSED(n));
 * (%.0lu prints nothing for 0.) */
#define PG_LOG_SUPPRESSED_FMT "%s%.0lu%s"
#define PG_LOG_SUPPRESSED(n) (n) ? ", " : "", (unsigned long)(n), (n) ? " similar lines suppressed" : ""

/* For event_set_log_callback(): libevent's messages (severity 0 debug .. 3
 * error) as "libevent" lines, at most 5 a second with a count of those
 * suppressed; thread-safe. */
void pg_log_libevent(int severity, const char *msg);

#endif
