/* SPDX-License-Identifier: Apache-2.0
 * Background work below request work: a unit of CPU-heavy work and the
 * interface of a worker pool's low-priority lane that runs it. A component
 * whose work must never delay request work (the scraper's decode and
 * translate; any pull receiver's) gets a struct pg_work_lane from its
 * owner and needs nothing else of the pool. Types only. */
#ifndef PG_CORE_WORK_H
#define PG_CORE_WORK_H

#include <stdbool.h>

struct event_base;

/* Owned by whoever submits it, from submit until done (or cancel) returns it. */
struct pg_work {
    void (*run)(struct pg_work *w);  /* on a worker thread: touches only what @w holds */
    void (*done)(struct pg_work *w); /* on the submitting loop, after run */
    const void *owner;               /* what pg_work_lane.cancel matches */
    struct pg_work *next;            /* the lane's while queued */
    void *lane_loop;                 /* the lane's */
};

struct pg_work_lane {
    void *arg; /* borrowed: the pool's owner */
    /* Queues @w behind every request job of the pool; runs when a worker is
     * free and one stays free for small requests. False when the pool has
     * no workers (then run it inline). Thread of the loop @base. */
    bool (*submit)(void *arg, struct event_base *base, struct pg_work *w);
    /* Takes back every work of @owner not yet done (waiting for one that
     * runs): returned chained by next, done not called. Loop thread. */
    struct pg_work *(*cancel)(void *arg, const void *owner);
};

#endif
