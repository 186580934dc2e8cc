/* SPDX-License-Identifier: Apache-2.0
 * One request's memory budget: what it reserved from core/memlimit at admission (an
 * estimate from Content-Length or the gzip ISIZE), corrected while it works. The memory
 * layers (core/bufpool's blocks, core/arena's chunks) charge the budget of the thread
 * they run on when they take memory and uncharge it when they give it back; past the
 * reservation a charge grows it against the memory limiter's hard limit, and a refused
 * charge makes the allocation fail, so the request ends with the limiter's message
 * instead of passing the limit. The layers know nothing of requests or processors: a
 * receiver makes its budget current around the work it does for one request.
 * Thread rule: a budget is used by one thread at a time (the loop, then a worker, then
 * the loop: the job hand-off orders them); the current budget is per thread. */
#ifndef PG_CORE_MEMBUDGET_H
#define PG_CORE_MEMBUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

struct pg_membudget {
    uint64_t id;        /* unique per pg_membudget_init: what an arena remembers */
    size_t estimate;    /* reserved at admission (for logs and the bench) */
    size_t reserved;    /* held in core/memlimit's in-flight bytes now */
    size_t charged;     /* bytes the memory layers hold for the request now */
    size_t peak;        /* the highest charged */
    bool refused;       /* a charge was refused: every later one is too */
    struct pg_status st; /* why (the limiter's words), once refused */
};

/* @admitted bytes were reserved with pg_memlimit_admit; the budget owns them now. */
void pg_membudget_init(struct pg_membudget *b, size_t admitted);
/* Makes @b (NULL: none) the calling thread's budget; returns the one it replaces, for
 * pg_membudget_leave. */
struct pg_membudget *pg_membudget_enter(struct pg_membudget *b);
void pg_membudget_leave(struct pg_membudget *prev);
/* pg_membudget_leave(@prev) after @b's work for one request: when a charge was refused
 * and the work failed (@err), the failure was the limiter's, so its code and words
 * replace @st's; the estimate against the charged peak is logged at debug level under
 * @log_name (NULL: no line). Returns the request's error. */
enum pg_err pg_membudget_leave_work(struct pg_membudget *b, struct pg_membudget *prev,
                                    enum pg_err err, struct pg_status *st, const char *log_name);
/* The calling thread's budget, or NULL. */
struct pg_membudget *pg_membudget_current(void);

/* Charges @bytes to the calling thread's budget. False (nothing charged) when the
 * reservation would have to grow past the memory limiter's hard limit, or an earlier
 * charge was refused: the caller fails the allocation. True without a budget. */
bool pg_membudget_charge(size_t bytes);
/* Charges without a check: memory already taken (a block larger than asked for). */
void pg_membudget_charge_anyway(size_t bytes);
/* Gives back @bytes of the calling thread's budget (never below zero). */
void pg_membudget_uncharge(size_t bytes);
/* The current budget's id, 0 when none: an arena notes it to uncharge only its own. */
uint64_t pg_membudget_current_id(void);

/* Re-estimates once more is known (the body's gzip ISIZE): the reservation becomes at
 * least @bytes (grown against the soft limit like an admission, since the work has not
 * started; false and @st set when that fails). Never shrinks. */
bool pg_membudget_reserve(struct pg_membudget *b, size_t bytes, struct pg_status *st);
/* Gives the whole reservation back (the request's memory is freed or handed on); the
 * budget keeps its figures for the log. Idempotent. */
void pg_membudget_end(struct pg_membudget *b);

#endif
