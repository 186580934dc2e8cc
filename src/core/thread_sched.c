/* SPDX-License-Identifier: Apache-2.0
 * Scheduling hints for the calling thread (see thread_sched.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "core/thread_sched.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__linux__) && defined(SYS_sched_setattr)
/* sched_setattr(2) on the calling thread: @policy, its nice value moved by
 * @nice_delta, and @slice_ns as the EEVDF slice (0 = the default). */
static bool set_attr(uint32_t policy, int nice_delta, uint64_t slice_ns)
{
    /* The kernel's struct sched_attr (linux/sched/types.h), VER1 = 56 bytes. */
    struct {
        uint32_t size;
        uint32_t sched_policy;
        uint64_t sched_flags;
        int32_t sched_nice;
        uint32_t sched_priority;
        uint64_t sched_runtime;
        uint64_t sched_deadline;
        uint64_t sched_period;
        uint32_t sched_util_min;
        uint32_t sched_util_max;
    } attr;
    pid_t tid = (pid_t)syscall(SYS_gettid);

    memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.sched_policy = policy;
    errno = 0;
    int cur = getpriority(PRIO_PROCESS, (id_t)tid);
    attr.sched_nice = (errno == 0 ? cur : 0) + nice_delta;
    attr.sched_runtime = slice_ns;
    return syscall(SYS_sched_setattr, tid, &attr, 0u) == 0;
}
#endif

void pg_sched_bulk_thread(int nice_delta, uint64_t slice_ns)
{
#if defined(__linux__) && defined(SYS_sched_setattr)
    if (set_attr(SCHED_BATCH, nice_delta, slice_ns)) {
        return;
    }
#endif
#ifdef __linux__
    /* Kernels without sched_setattr: per thread (the tid) all the same. */
    pid_t tid = (pid_t)syscall(SYS_gettid);
    struct sched_param sp;

    memset(&sp, 0, sizeof(sp));
    (void)sched_setscheduler(tid, SCHED_BATCH, &sp);
    errno = 0;
    int cur = getpriority(PRIO_PROCESS, (id_t)tid);
    if (errno == 0) {
        (void)setpriority(PRIO_PROCESS, (id_t)tid, cur + nice_delta);
    }
#else
    (void)nice_delta;
#endif
    (void)slice_ns;
}

static _Thread_local bool latency_thread;

bool pg_sched_is_latency_thread(void)
{
    return latency_thread;
}

bool pg_sched_latency_thread(uint64_t slice_ns)
{
    latency_thread = true;
#if defined(__linux__) && defined(SYS_sched_setattr)
    return set_attr(SCHED_OTHER, 0, slice_ns);
#else
    (void)slice_ns;
    return false;
#endif
}
