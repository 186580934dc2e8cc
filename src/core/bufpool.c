/* SPDX-License-Identifier: Apache-2.0
 * The large-buffer pool (see bufpool.h): anonymous mappings kept resident between
 * requests in a small slot table under one mutex, handed out best-fit (a larger block is
 * split; several smaller ones are moved side by side by mremap, which keeps their resident
 * pages), unmapped by a decay thread after a quiet period or at once under memory pressure.
 * Why keep pages rather than madvise them: refilling 32 MiB of fresh 4 KiB pages costs
 * ~21 ms here against ~2.5 ms for writing resident ones (bench/README.md "large"). */
#define _GNU_SOURCE
#include "core/bufpool.h"

#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/membudget.h"
#include "core/memlimit.h"
#include "core/thread_sched.h"

#define SLOTS 128
/* An unwritten tail at least this long is unmapped when a block comes back. */
#define TAIL_MIN ((size_t)64 * 1024)
#define DECAY_NICE 5
#define DECAY_SLICE_NS (500u * 1000u)

struct slot {
    void *p;
    size_t len;
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;         /* the decay thread waits on it (CLOCK_MONOTONIC) */
    struct slot s[SLOTS];      /* kept blocks, s[0..n) */
    size_t n;
    size_t held;               /* sum of s[].len */
    size_t cap;
    int64_t decay_ns;
    int64_t last_ns;           /* last get or put of a block */
    int thread;                /* 0 not started, 1 running, -1 could not start */
    struct pg_bufpool_stats st;
} g = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .cap = PG_BUFPOOL_CAP,
    .decay_ns = PG_BUFPOOL_DECAY_NS,
};

static size_t page_round(size_t n)
{
    long p = sysconf(_SC_PAGESIZE); /* glibc: from the auxiliary vector, no system call */
    size_t page = p > 0 ? (size_t)p : 4096u;

    return n > SIZE_MAX - page ? 0 : (n + page - 1) & ~(page - 1);
}

static void *map_fresh(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    return p == MAP_FAILED ? NULL : p;
}

/* Removes slot @i (lock held) and returns it. */
static struct slot take_locked(size_t i)
{
    struct slot b = g.s[i];

    g.s[i] = g.s[--g.n];
    g.held -= b.len;
    return b;
}

/* Index of the smallest kept block of at least @len bytes, or of the largest of all when
 * none is that large (@fits false); SIZE_MAX when the pool is empty. Lock held. */
static size_t pick_locked(size_t len, bool *fits)
{
    size_t best = SIZE_MAX, largest = SIZE_MAX;

    for (size_t i = 0; i < g.n; i++) {
        if (g.s[i].len >= len && (best == SIZE_MAX || g.s[i].len < g.s[best].len)) {
            best = i;
        }
        if (largest == SIZE_MAX || g.s[i].len > g.s[largest].len) {
            largest = i;
        }
    }
    *fits = best != SIZE_MAX;
    return *fits ? best : largest;
}

/* The first @len bytes of slot @i (lock held): the whole block when the rest would be
 * small (unless @exact), else its head, the tail staying kept (the same mapping: its
 * pages stay). */
static struct slot cut_locked(size_t i, size_t len, bool exact)
{
    struct slot b = g.s[i];

    if (b.len == len || (!exact && b.len - len < PG_BUFPOOL_MIN)) {
        return take_locked(i);
    }
    g.s[i].p = (char *)b.p + len;
    g.s[i].len -= len;
    g.held -= len;
    b.len = len;
    return b;
}

/* Moves @n kept pieces into the fresh range at @base, back to back: mremap moves their
 * page tables, so their resident pages serve the new block without a fault or a copy;
 * what they do not cover stays fresh. NULL @base (OOM): the pieces are unmapped. */
static void *stitch_at(char *base, const struct slot *pieces, size_t n)
{
    size_t off = 0;

    for (size_t i = 0; i < n; i++) {
        if (base == NULL || mremap(pieces[i].p, pieces[i].len, pieces[i].len,
                                   MREMAP_MAYMOVE | MREMAP_FIXED, base + off) == MAP_FAILED) {
            munmap(pieces[i].p, pieces[i].len); /* that part of base stays fresh */
        }
        off += pieces[i].len;
    }
    return base;
}

/* stitch_at into one fresh mapping of @len bytes. */
static void *stitch(const struct slot *pieces, size_t n, size_t len)
{
    return stitch_at(map_fresh(len), pieces, n);
}

void *pg_bufpool_get(size_t size, size_t *got)
{
    size_t len = page_round(size), want, n = 0;
    struct slot pieces[SLOTS];
    void *p;

    *got = 0;
    if (len == 0) {
        return NULL;
    }
    /* The request this thread works for pays for the block first (core/membudget.h): past
     * the memory limit the allocation fails instead of the process growing. */
    if (!pg_membudget_charge(len)) {
        return NULL;
    }
    pthread_mutex_lock(&g.mu);
    g.last_ns = pg_mono_ns();
    /* One block that is large enough, or else pieces of the largest ones until @len is
     * covered: what the pool holds is spent before anything fresh is mapped, so kept
     * blocks never add to the process's peak beside fresh ones. */
    for (want = len; want > 0 && g.n > 0; n++) {
        bool fits;
        size_t i = pick_locked(want, &fits);

        /* a stitched block's last piece must end exactly at its end */
        pieces[n] = fits ? cut_locked(i, want, n > 0) : take_locked(i);
        want = pieces[n].len >= want ? 0 : want - pieces[n].len;
    }
    if (want == 0) {
        g.st.reused++;
    } else {
        g.st.mapped++;
    }
    pthread_mutex_unlock(&g.mu);
    if (n == 1 && want == 0) {
        p = pieces[0].p;
        len = pieces[0].len;
    } else if (n == 0) {
        p = map_fresh(len);
    } else {
        p = stitch(pieces, n, len);
    }
    if (p != NULL) {
        *got = len;
        if (len > page_round(size)) {
            pg_membudget_charge_anyway(len - page_round(size)); /* a whole kept block */
        }
    } else {
        pg_membudget_uncharge(page_round(size));
    }
    return p;
}

/* Kept blocks covering @want bytes into @pieces (lock held), the last one cut to end
 * exactly at @want; returns how many, *@left what they do not cover. */
static size_t take_pieces_locked(size_t want, struct slot *pieces, size_t *left)
{
    size_t n = 0;

    for (; want > 0 && g.n > 0; n++) {
        bool fits;
        size_t i = pick_locked(want, &fits);

        pieces[n] = fits ? cut_locked(i, want, true) : take_locked(i);
        want = pieces[n].len >= want ? 0 : want - pieces[n].len;
    }
    *left = want;
    return n;
}

/* Puts @n pieces taken by take_pieces_locked back (a grow that could not map). */
static void untake_pieces(const struct slot *pieces, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        pg_bufpool_put(pieces[i].p, pieces[i].len, pieces[i].len);
    }
}

/* Moves [@src, + @len) to @dst (a range of ours, mapped): mremap moves page tables, but
 * only within one mapping, and a stitched block is several, so a range it refuses is
 * split in halves; what cannot move even then (a page-sized piece: the kernel out of
 * mappings) is copied and unmapped. Cannot fail. */
static void move_range(char *src, size_t len, char *dst)
{
    size_t half;

    if (mremap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst) != MAP_FAILED) {
        return;
    }
    half = page_round(len / 2);
    if (len <= TAIL_MIN || half >= len) {
        memcpy(dst, src, len);
        munmap(src, len);
        return;
    }
    move_range(src, half, dst);
    move_range(src + half, len - half, dst + half);
}

void *pg_bufpool_grow(void *p, size_t size, size_t new_size, size_t *got)
{
    size_t len = page_round(new_size), n, left;
    struct slot pieces[SLOTS];
    char *base;

    *got = 0;
    if (p == NULL || len == 0 || new_size < size || size == 0 || size != page_round(size)) {
        return NULL;
    }
    if (len == size) {
        *got = size;
        return p;
    }
    /* The growth is the request's memory as a new block would be (core/membudget.h);
     * pg_bufpool_put later gives back the whole grown size. */
    if (!pg_membudget_charge(len - size)) {
        return NULL;
    }
    pthread_mutex_lock(&g.mu);
    g.last_ns = pg_mono_ns();
    n = take_pieces_locked(len - size, pieces, &left);
    if (left == 0) {
        g.st.reused++;
    } else {
        g.st.mapped++;
    }
    pthread_mutex_unlock(&g.mu);
    if (n == 0 && (base = mremap(p, size, len, MREMAP_MAYMOVE)) != MAP_FAILED) {
        /* nothing kept, and one mapping: the kernel extends it (fresh pages) */
        *got = len;
        return base;
    }
    /* One new range: the block's own pages moved to its start, the pieces behind them. */
    if ((base = map_fresh(len)) == NULL) {
        size_t back = 0;

        for (size_t i = 0; i < n; i++) {
            back += pieces[i].len;
        }
        untake_pieces(pieces, n); /* pg_bufpool_put uncharges each piece */
        pg_membudget_uncharge(len - size - back);
        return NULL;
    }
    move_range(p, size, base);
    (void)stitch_at(base + size, pieces, n);
    *got = len;
    return base;
}

static void *decay_main(void *arg);

/* Starts the decay thread on the first kept block (lock held). */
static void start_decay_locked(void)
{
    pthread_condattr_t ca;
    pthread_t t;

    if (g.thread != 0) {
        return;
    }
    g.thread = -1;
    if (pthread_condattr_init(&ca) != 0) {
        return;
    }
    if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
        pthread_cond_init(&g.cv, &ca) == 0) {
        if (pthread_create(&t, NULL, decay_main, NULL) == 0) {
            pthread_detach(t);
            g.thread = 1;
        } else {
            pthread_cond_destroy(&g.cv);
        }
    }
    pthread_condattr_destroy(&ca);
}

static size_t reclaim(void)
{
    return pg_bufpool_release();
}

/* True when keeping @len more bytes would have the pool hold memory the memory limiter
 * needs: in-flight bytes plus what the pool holds past the soft limit. */
static bool under_pressure(size_t len)
{
    uint64_t soft = pg_memlimit_soft_limit();

    return soft != 0 && pg_memlimit_inflight() + g.held + len > soft;
}

/* The memory limiter empties the pool before it reads RSS past the soft limit as a
 * reason to refuse (kept blocks are resident, so they count in RSS). */
static void hook_memlimit(void)
{
    pg_memlimit_set_reclaim(reclaim);
}

bool pg_bufpool_room(size_t bytes)
{
    bool room;

    pthread_mutex_lock(&g.mu);
    room = g.n < SLOTS && bytes <= g.cap && g.held <= g.cap - bytes && !under_pressure(bytes);
    pthread_mutex_unlock(&g.mu);
    return room;
}

void pg_bufpool_put(void *p, size_t size, size_t used)
{
    static pthread_once_t hook_once = PTHREAD_ONCE_INIT;
    size_t keep_len = page_round(used < size ? used : size);
    bool keep;

    if (p == NULL) {
        return;
    }
    pg_membudget_uncharge(size);
    if (keep_len < size && size - keep_len >= TAIL_MIN) {
        munmap((char *)p + keep_len, size - keep_len);
        size = keep_len;
    }
    if (size == 0) {
        return;
    }
    (void)pthread_once(&hook_once, hook_memlimit);
    if (pg_memlimit_soft_limit() != 0 && pg_memlimit_read_rss() > pg_memlimit_soft_limit()) {
        /* Past the soft limit now (what is held counts in RSS): give everything back at
         * once rather than at the next admission's RSS check. One /proc read per large
         * block, only with a memory limit configured. */
        pg_bufpool_release();
        munmap(p, size);
        return;
    }
    pthread_mutex_lock(&g.mu);
    g.last_ns = pg_mono_ns();
    keep = g.n < SLOTS && size <= g.cap && g.held <= g.cap - size;
    if (keep && under_pressure(size)) {
        keep = false;
        g.st.pressure++;
    }
    if (keep) {
        start_decay_locked();
        keep = g.thread == 1; /* without the thread nothing would ever give it back */
    }
    if (keep) {
        g.s[g.n].p = p;
        g.s[g.n].len = size;
        g.n++;
        g.held += size;
        if (g.n == 1) {
            pthread_cond_signal(&g.cv); /* the decay thread waits for a first block */
        }
    }
    pthread_mutex_unlock(&g.mu);
    if (!keep) {
        munmap(p, size);
    }
}

/* Takes every kept block (lock held) into @out; returns how many. */
static size_t take_all_locked(struct slot *out)
{
    size_t n = g.n;

    memcpy(out, g.s, n * sizeof(*out));
    g.n = 0;
    g.held = 0;
    return n;
}

static size_t unmap_all(const struct slot *s, size_t n)
{
    size_t bytes = 0;

    for (size_t i = 0; i < n; i++) {
        munmap(s[i].p, s[i].len);
        bytes += s[i].len;
    }
    return bytes;
}

size_t pg_bufpool_release(void)
{
    struct slot out[SLOTS];
    size_t n, bytes;

    pthread_mutex_lock(&g.mu);
    n = take_all_locked(out);
    if (n > 0) {
        g.st.pressure++;
    }
    pthread_mutex_unlock(&g.mu);
    bytes = unmap_all(out, n);
    return bytes;
}

static struct timespec mono_ts(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};

    return ts;
}

/* Waits for a quiet period of decay_ns after the last get/put, then unmaps everything
 * kept and trims the malloc heaps (the small blocks a large request freed), the work
 * pg_arena_destroy used to do after every large request. */
static void *decay_main(void *arg)
{
    (void)arg;
    pg_sched_bulk_thread(DECAY_NICE, DECAY_SLICE_NS);
    pthread_mutex_lock(&g.mu);
    for (;;) {
        struct slot out[SLOTS];
        int64_t due;
        size_t n;

        while (g.n == 0) {
            pthread_cond_wait(&g.cv, &g.mu);
        }
        due = g.last_ns + g.decay_ns;
        if (pg_mono_ns() < due) {
            struct timespec ts = mono_ts(due);

            (void)pthread_cond_timedwait(&g.cv, &g.mu, &ts);
            continue;
        }
        n = take_all_locked(out);
        g.st.decays++;
        pthread_mutex_unlock(&g.mu);
        unmap_all(out, n);
        malloc_trim(0);
        pthread_mutex_lock(&g.mu);
    }
    return NULL;
}

void pg_bufpool_stats(struct pg_bufpool_stats *out)
{
    pthread_mutex_lock(&g.mu);
    *out = g.st;
    out->held = g.held;
    out->blocks = g.n;
    pthread_mutex_unlock(&g.mu);
}

void pg_bufpool_configure(size_t cap, int64_t decay_ns)
{
    pthread_mutex_lock(&g.mu);
    g.cap = cap != 0 ? cap : PG_BUFPOOL_CAP;
    g.decay_ns = decay_ns > 0 ? decay_ns : PG_BUFPOOL_DECAY_NS;
    if (g.thread == 1) {
        pthread_cond_signal(&g.cv); /* a shorter decay takes effect now */
    }
    pthread_mutex_unlock(&g.mu);
}
