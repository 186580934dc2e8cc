/* SPDX-License-Identifier: Apache-2.0
 * Scheduling hints for the calling thread (Linux; no-ops elsewhere or when
 * the kernel refuses). A loop thread that answers every client wants to run
 * as soon as it wakes; bulk workers (large translations) want throughput and
 * must not preempt it. Best effort: failures change nothing else. */
#ifndef PG_CORE_THREAD_SCHED_H
#define PG_CORE_THREAD_SCHED_H

#include <stdbool.h>
#include <stdint.h>

/* The calling thread is bulk CPU work: SCHED_BATCH (no wakeup preemption
 * of others), @nice_delta more niceness, and a time slice of @slice_ns
 * (0 = the kernel's default; Linux 6.12+): a short one bounds how long a
 * latency-sensitive thread that wakes waits for it to yield the CPU. */
void pg_sched_bulk_thread(int nice_delta, uint64_t slice_ns);

/* The calling thread is latency-sensitive: asks the scheduler (EEVDF,
 * Linux 6.12+) for a time slice of @slice_ns, so that on waking it gets an
 * earlier deadline than the threads with the default slice (~3 ms) and runs
 * sooner. True when the kernel took it. */
bool pg_sched_latency_thread(uint64_t slice_ns);

/* True on a thread that called pg_sched_latency_thread() (whatever the
 * kernel said): work that can wait is handed off such a thread. */
bool pg_sched_is_latency_thread(void);

#endif
