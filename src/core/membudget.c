/* SPDX-License-Identifier: Apache-2.0
 * A request's memory budget (see membudget.h): a thread-local current budget and its
 * charges, growing the request's reservation in core/memlimit as they pass it. */
#include "core/membudget.h"

#include <stdatomic.h>
#include <string.h>

#include "core/log.h"
#include "core/memlimit.h"

/* Growth goes to memlimit in steps of at least this: a large request's chunks double
 * from 16 KiB, and each step is an atomic on a shared counter. */
#define GROW_STEP ((size_t)1 << 20)

static _Thread_local struct pg_membudget *t_cur;
static _Atomic uint64_t next_id = 1;

void pg_membudget_init(struct pg_membudget *b, size_t admitted)
{
    memset(b, 0, sizeof(*b));
    b->id = atomic_fetch_add(&next_id, 1);
    b->estimate = admitted;
    b->reserved = admitted;
    pg_status_clear(&b->st);
}

struct pg_membudget *pg_membudget_enter(struct pg_membudget *b)
{
    struct pg_membudget *prev = t_cur;

    t_cur = b;
    return prev;
}

void pg_membudget_leave(struct pg_membudget *prev)
{
    t_cur = prev;
}

enum pg_err pg_membudget_leave_work(struct pg_membudget *b, struct pg_membudget *prev,
                                    enum pg_err err, struct pg_status *st, const char *log_name)
{
    pg_membudget_leave(prev);
    if (b->refused && err != PG_ERR_OK) {
        err = b->st.code; /* an allocation the limiter refused: its words */
        *st = b->st;
    }
    if (log_name != NULL) {
        pg_log_debug(log_name, "memory: %.1f MiB estimated, %.1f MiB charged at the peak%s",
                     (double)b->estimate / 1048576.0, (double)b->peak / 1048576.0,
                     b->refused ? " (refused by the memory limiter)" : "");
    }
    return err;
}

struct pg_membudget *pg_membudget_current(void)
{
    return t_cur;
}

uint64_t pg_membudget_current_id(void)
{
    return t_cur != NULL ? t_cur->id : 0;
}

static void note(struct pg_membudget *b, size_t bytes)
{
    b->charged += bytes;
    if (b->charged > b->peak) {
        b->peak = b->charged;
    }
}

bool pg_membudget_charge(size_t bytes)
{
    struct pg_membudget *b = t_cur;
    size_t want, grow;

    if (b == NULL) {
        return true;
    }
    if (b->refused) {
        return false;
    }
    want = b->charged + bytes;
    if (want > b->reserved) {
        grow = want - b->reserved;
        if (grow < GROW_STEP) {
            grow = GROW_STEP;
        }
        if (!pg_memlimit_grow(grow, want, &b->st)) {
            b->refused = true;
            return false;
        }
        b->reserved += grow;
    }
    note(b, bytes);
    return true;
}

void pg_membudget_charge_anyway(size_t bytes)
{
    struct pg_membudget *b = t_cur;

    if (b == NULL) {
        return;
    }
    if (b->charged + bytes > b->reserved) {
        size_t grow = b->charged + bytes - b->reserved;

        pg_memlimit_charge(grow); /* taken already: counted, whatever the limit */
        b->reserved += grow;
    }
    note(b, bytes);
}

void pg_membudget_uncharge(size_t bytes)
{
    struct pg_membudget *b = t_cur;

    if (b != NULL) {
        b->charged = b->charged >= bytes ? b->charged - bytes : 0;
    }
}

bool pg_membudget_reserve(struct pg_membudget *b, size_t bytes, struct pg_status *st)
{
    if (bytes <= b->reserved) {
        return true;
    }
    if (!pg_memlimit_admit(bytes - b->reserved, st)) {
        return false;
    }
    b->reserved = bytes;
    if (bytes > b->estimate) {
        b->estimate = bytes;
    }
    return true;
}

void pg_membudget_end(struct pg_membudget *b)
{
    pg_memlimit_release(b->reserved);
    b->reserved = 0;
}
