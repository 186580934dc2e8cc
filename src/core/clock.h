/* SPDX-License-Identifier: Apache-2.0
 * The process's clocks in one place: monotonic time for deadlines, intervals
 * and latencies, real (Unix) time for timestamps that leave the process.
 * Thread-safe (clock_gettime). */
#ifndef PG_CORE_CLOCK_H
#define PG_CORE_CLOCK_H

#include <stdint.h>
#include <sys/time.h>
#include <time.h>

#define PG_NS_PER_SEC 1000000000LL

/* The two clocks as a struct timespec, for absolute condition-variable
 * deadlines and timestamps printed to the nanosecond. */
static inline struct timespec pg_mono_ts(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts;
}

static inline struct timespec pg_real_ts(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return ts;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t pg_mono_ns(void)
{
    struct timespec ts = pg_mono_ts();

    return (int64_t)ts.tv_sec * PG_NS_PER_SEC + ts.tv_nsec;
}

/* CLOCK_MONOTONIC in seconds. */
static inline double pg_mono_s(void)
{
    return (double)pg_mono_ns() / 1e9;
}

/* CLOCK_REALTIME in nanoseconds since the Unix epoch. */
static inline int64_t pg_real_ns(void)
{
    struct timespec ts = pg_real_ts();

    return (int64_t)ts.tv_sec * PG_NS_PER_SEC + ts.tv_nsec;
}

/* @ns (a negative span counts as 0) as the struct timeval libevent's timers
 * take. */
static inline struct timeval pg_ns_to_tv(int64_t ns)
{
    struct timeval tv;

    if (ns < 0) {
        ns = 0;
    }
    tv.tv_sec = (time_t)(ns / PG_NS_PER_SEC);
    tv.tv_usec = (suseconds_t)(ns % PG_NS_PER_SEC / 1000);
    return tv;
}

#endif
