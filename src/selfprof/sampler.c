/* SPDX-License-Identifier: Apache-2.0
 * The heap sampler's tables: distinct stacks (buckets) with weighted alloc and
 * in-use counters, the live sampled allocations (so a free can subtract what
 * its malloc added), and a counting filter that lets unsampled frees skip the
 * lock. All memory comes from mmap, so this code may run inside malloc. */
#include "selfprof/sampler.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "core/clock.h"
#include "selfprof/selfprof.h"

/* Defined by malloc_hooks.c; absent (NULL) when the interposer is not linked. */
extern const int pg_selfprof_hooks_present_ __attribute__((weak));

_Atomic uint64_t pg_sampler_rate_ = PG_SELFPROF_DEFAULT_RATE;
_Atomic uint32_t pg_sampler_gen_ = 1;
_Atomic uint16_t pg_sampler_filter_[1u << PG_SAMPLER_FILTER_BITS];
__thread int64_t pg_sampler_left_;
__thread int pg_sampler_busy_;

static __thread uint64_t t_rng;
static _Atomic uint64_t g_seed;
static _Atomic uint64_t g_thread_seq;

struct bucket {
    uint64_t hash;
    uint32_t frame_off;
    uint32_t depth;
    struct pg_sampler_counts c;
};

struct live_table {
    struct pg_sampler_live *slots; /* mmap'd; ptr == 0 means empty */
    size_t cap;                    /* power of two */
    size_t n;
};

#define INDEX_SLOTS (2u * PG_SAMPLER_MAX_BUCKETS)
#define LIVE_INITIAL 4096u

/* Everything below is guarded by g_lock. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_ready;
static bool g_failed;
static uint32_t *g_index;        /* INDEX_SLOTS: bucket id + 1, 0 = empty */
static struct bucket *g_buckets; /* PG_SAMPLER_MAX_BUCKETS, id 0 = overflow */
static uintptr_t *g_frames;      /* PG_SAMPLER_MAX_FRAMES */
static _Atomic size_t g_nbuckets;
static size_t g_nframes;
static struct live_table g_live;
static uint64_t g_samples;
static uint64_t g_dropped;

static void *map_zeroed(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Called with g_lock held. mmap only: never malloc here. */
static bool tables_ready(void)
{
    if (g_ready) {
        return true;
    }
    if (g_failed) {
        return false;
    }
    int saved = errno;
    g_index = map_zeroed(INDEX_SLOTS * sizeof(*g_index));
    g_buckets = map_zeroed(PG_SAMPLER_MAX_BUCKETS * sizeof(*g_buckets));
    g_frames = map_zeroed(PG_SAMPLER_MAX_FRAMES * sizeof(*g_frames));
    g_live.slots = map_zeroed(LIVE_INITIAL * sizeof(*g_live.slots));
    errno = saved;
    if (g_index == NULL || g_buckets == NULL || g_frames == NULL || g_live.slots == NULL) {
        g_failed = true;
        return false;
    }
    g_live.cap = LIVE_INITIAL;
    atomic_store(&g_nbuckets, 1); /* bucket 0: "stack table full", no frames */
    g_ready = true;
    return true;
}

/* ---- random intervals ----------------------------------------------------- */

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rng_next(void)
{
    if (t_rng == 0) {
        uint64_t seed = atomic_load_explicit(&g_seed, memory_order_relaxed);
        if (seed == 0) {
            struct timespec ts;
            ts = pg_mono_ts();
            seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uintptr_t)&t_rng;
        }
        uint64_t mix = seed + atomic_fetch_add(&g_thread_seq, 1) * 0xD1B54A32D192ED03ull;
        t_rng = splitmix(&mix) | 1;
    }
    /* xorshift64* */
    t_rng ^= t_rng >> 12;
    t_rng ^= t_rng << 25;
    t_rng ^= t_rng >> 27;
    return t_rng * 0x2545F4914F6CDD1Dull;
}

void pg_sampler_set_seed(uint64_t seed)
{
    atomic_store(&g_seed, seed);
    atomic_store(&g_thread_seq, 0);
    t_rng = 0;
}

int64_t pg_sampler_next_interval(uint64_t rate)
{
    if (rate <= 1) {
        return 1;
    }
    /* u in (0, 1]: -ln(u) is then finite and >= 0. */
    double u = (double)((rng_next() >> 11) + 1) * (1.0 / 9007199254740992.0);
    double t = -log(u) * (double)rate;
    if (t > (double)((int64_t)1 << 46)) {
        t = (double)((int64_t)1 << 46);
    }
    int64_t n = (int64_t)ceil(t);
    return n < 1 ? 1 : n;
}

double pg_sampler_weight(uint64_t size, uint64_t rate)
{
    if (rate <= 1) {
        return 1.0;
    }
    double p = -expm1(-(double)size / (double)rate);
    return p > 0 ? 1.0 / p : 1.0;
}

/* ---- rate and status -------------------------------------------------------- */

bool pg_selfprof_hooks_linked(void)
{
    return &pg_selfprof_hooks_present_ != NULL;
}

void pg_selfprof_set_rate(uint64_t rate)
{
    atomic_store(&pg_sampler_rate_, rate);
    atomic_fetch_add(&pg_sampler_gen_, 1);
    /* The calling thread picks the new rate up at its next allocation; other
     * threads at the end of their current interval. */
    pg_sampler_left_ = 0;
}

uint64_t pg_selfprof_rate(void)
{
    return atomic_load(&pg_sampler_rate_);
}

bool pg_selfprof_enabled(void)
{
    return pg_selfprof_hooks_linked() && pg_selfprof_rate() != 0;
}

const char *pg_selfprof_why_off(void)
{
    if (!pg_selfprof_hooks_linked()) {
        return "heap sampler is off: this build has no malloc interposer (sanitizer build or "
               "-DPG_SELFPROF=OFF); rebuild with -DPG_SELFPROF=ON and without PG_SANITIZE";
    }
    if (pg_selfprof_rate() == 0) {
        return "heap sampler is off: heap_sample_rate is 0; set extensions::pprof::heap_sample_rate "
               "(e.g. 524288) and restart";
    }
    return "heap sampler is on";
}

/* ---- buckets ------------------------------------------------------------------ */

static uint64_t stack_hash(const uintptr_t *pcs, int depth)
{
    uint64_t h = 0xCBF29CE484222325ull ^ (uint64_t)depth;
    for (int i = 0; i < depth; i++) {
        h ^= (uint64_t)pcs[i];
        h *= 0x100000001B3ull;
        h ^= h >> 29;
    }
    return h;
}

/* Returns the bucket id for the stack (0 when the tables are full). Lock held. */
static uint32_t bucket_for(const uintptr_t *pcs, int depth)
{
    uint64_t h = stack_hash(pcs, depth);
    size_t mask = INDEX_SLOTS - 1;
    size_t nb = atomic_load_explicit(&g_nbuckets, memory_order_relaxed);
    for (size_t i = (size_t)h & mask, probes = 0; probes < INDEX_SLOTS; i = (i + 1) & mask, probes++) {
        uint32_t v = g_index[i];
        if (v == 0) {
            if (nb >= PG_SAMPLER_MAX_BUCKETS || g_nframes + (size_t)depth > PG_SAMPLER_MAX_FRAMES) {
                return 0;
            }
            struct bucket *b = &g_buckets[nb];
            b->hash = h;
            b->depth = (uint32_t)depth;
            b->frame_off = (uint32_t)g_nframes;
            memcpy(&g_frames[g_nframes], pcs, (size_t)depth * sizeof(*pcs));
            g_nframes += (size_t)depth;
            g_index[i] = (uint32_t)nb + 1;
            atomic_store_explicit(&g_nbuckets, nb + 1, memory_order_release);
            return (uint32_t)nb;
        }
        struct bucket *b = &g_buckets[v - 1];
        if (b->hash == h && b->depth == (uint32_t)depth &&
            memcmp(&g_frames[b->frame_off], pcs, (size_t)depth * sizeof(*pcs)) == 0) {
            return v - 1;
        }
    }
    return 0;
}

/* ---- live table (open addressing, linear probing, backward-shift delete) -------- */

static size_t live_home(uintptr_t p, size_t cap)
{
    uint64_t h = ((uint64_t)p >> 4) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

static struct pg_sampler_live *live_find(uintptr_t p)
{
    size_t mask = g_live.cap - 1;
    for (size_t i = live_home(p, g_live.cap);; i = (i + 1) & mask) {
        if (g_live.slots[i].ptr == p) {
            return &g_live.slots[i];
        }
        if (g_live.slots[i].ptr == 0) {
            return NULL;
        }
    }
}

static void live_insert_raw(struct pg_sampler_live *slots, size_t cap, const struct pg_sampler_live *e)
{
    size_t mask = cap - 1;
    size_t i = live_home(e->ptr, cap);
    while (slots[i].ptr != 0) {
        i = (i + 1) & mask;
    }
    slots[i] = *e;
}

static void live_delete(struct pg_sampler_live *slot)
{
    size_t mask = g_live.cap - 1;
    size_t i = (size_t)(slot - g_live.slots);
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (g_live.slots[j].ptr == 0) {
            break;
        }
        size_t k = live_home(g_live.slots[j].ptr, g_live.cap);
        /* Move j back to i unless its home lies cyclically in (i, j]. */
        bool in_range = (i <= j) ? (i < k && k <= j) : (i < k || k <= j);
        if (!in_range) {
            g_live.slots[i] = g_live.slots[j];
            i = j;
        }
    }
    memset(&g_live.slots[i], 0, sizeof(g_live.slots[i]));
    g_live.n--;
}

static bool live_grow(void)
{
    size_t ncap = g_live.cap * 2;
    if (ncap > PG_SAMPLER_MAX_LIVE) {
        return false;
    }
    int saved = errno;
    struct pg_sampler_live *ns = map_zeroed(ncap * sizeof(*ns));
    if (ns == NULL) {
        errno = saved;
        return false;
    }
    for (size_t i = 0; i < g_live.cap; i++) {
        if (g_live.slots[i].ptr != 0) {
            live_insert_raw(ns, ncap, &g_live.slots[i]);
        }
    }
    munmap(g_live.slots, g_live.cap * sizeof(*g_live.slots));
    errno = saved;
    g_live.slots = ns;
    g_live.cap = ncap;
    return true;
}

static void filter_inc(uintptr_t p)
{
    _Atomic uint16_t *c = &pg_sampler_filter_[pg_sampler_filter_slot((const void *)p)];
    uint16_t v = atomic_load_explicit(c, memory_order_relaxed);
    if (v != UINT16_MAX) { /* saturated slots stay set forever: only costs a lock */
        atomic_store_explicit(c, (uint16_t)(v + 1), memory_order_relaxed);
    }
}

static void filter_dec(uintptr_t p)
{
    _Atomic uint16_t *c = &pg_sampler_filter_[pg_sampler_filter_slot((const void *)p)];
    uint16_t v = atomic_load_explicit(c, memory_order_relaxed);
    if (v != UINT16_MAX && v != 0) {
        atomic_store_explicit(c, (uint16_t)(v - 1), memory_order_relaxed);
    }
}

/* Removes a live entry and its in-use contribution. Lock held. */
static void retire(struct pg_sampler_live *slot)
{
    struct bucket *b = &g_buckets[slot->bucket];
    b->c.inuse_objects -= slot->weight;
    b->c.inuse_bytes -= slot->weight * (double)slot->size;
    filter_dec(slot->ptr);
    live_delete(slot);
}

/* Inserts a live entry and its in-use contribution. Lock held. False when full. */
static bool track(const struct pg_sampler_live *e)
{
    struct pg_sampler_live *old = live_find(e->ptr);
    if (old != NULL) {
        retire(old); /* its free bypassed us; the address was reused */
    }
    if ((g_live.n + 1) * 4 > g_live.cap * 3 && !live_grow()) {
        return false;
    }
    live_insert_raw(g_live.slots, g_live.cap, e);
    g_live.n++;
    filter_inc(e->ptr);
    struct bucket *b = &g_buckets[e->bucket];
    b->c.inuse_objects += e->weight;
    b->c.inuse_bytes += e->weight * (double)e->size;
    return true;
}

void pg_sampler_record_alloc(const void *p, uint64_t size, double weight, const uintptr_t *pcs,
                             int depth)
{
    if (depth > PG_SAMPLER_MAX_DEPTH) {
        depth = PG_SAMPLER_MAX_DEPTH;
    }
    if (depth < 0) {
        depth = 0;
    }
    pthread_mutex_lock(&g_lock);
    if (!tables_ready()) {
        g_dropped++;
        pthread_mutex_unlock(&g_lock);
        return;
    }
    uint32_t id = bucket_for(pcs, depth);
    if (id == 0) {
        g_dropped++; /* counted, but under the overflow bucket without a stack */
    }
    struct bucket *b = &g_buckets[id];
    b->c.alloc_objects += weight;
    b->c.alloc_bytes += weight * (double)size;
    struct pg_sampler_live e = {(uintptr_t)p, id, 0, weight, size};
    if (!track(&e)) {
        g_dropped++; /* alloc counted, in-use not: the live table is at its cap */
    }
    g_samples++;
    pthread_mutex_unlock(&g_lock);
}


bool pg_sampler_take(const void *p, struct pg_sampler_live *out)
{
    bool found = false;
    int saved = errno;
    pthread_mutex_lock(&g_lock);
    if (g_ready) {
        struct pg_sampler_live *slot = live_find((uintptr_t)p);
        if (slot != NULL) {
            *out = *slot;
            retire(slot);
            found = true;
        }
    }
    pthread_mutex_unlock(&g_lock);
    errno = saved;
    return found;
}

bool pg_sampler_record_free(const void *p)
{
    struct pg_sampler_live unused; /* a free has no use for the sample it retires */

    return pg_sampler_take(p, &unused);
}

void pg_sampler_put_back(const struct pg_sampler_live *e)
{
    int saved = errno;
    pthread_mutex_lock(&g_lock);
    if (g_ready && !track(e)) {
        g_dropped++;
    }
    pthread_mutex_unlock(&g_lock);
    errno = saved;
}

void pg_sampler_reset(void)
{
    pthread_mutex_lock(&g_lock);
    if (g_ready) {
        memset(g_index, 0, INDEX_SLOTS * sizeof(*g_index));
        memset(g_buckets, 0, atomic_load(&g_nbuckets) * sizeof(*g_buckets));
        memset(g_live.slots, 0, g_live.cap * sizeof(*g_live.slots));
        for (size_t i = 0; i < (1u << PG_SAMPLER_FILTER_BITS); i++) {
            atomic_store_explicit(&pg_sampler_filter_[i], 0, memory_order_relaxed);
        }
        g_live.n = 0;
        g_nframes = 0;
        atomic_store(&g_nbuckets, 1);
        g_samples = 0;
        g_dropped = 0;
    }
    pthread_mutex_unlock(&g_lock);
}

size_t pg_sampler_bucket_count(void)
{
    return atomic_load_explicit(&g_nbuckets, memory_order_acquire);
}

size_t pg_sampler_snapshot(struct pg_sampler_counts *out, size_t cap)
{
    pthread_mutex_lock(&g_lock);
    size_t n = atomic_load(&g_nbuckets);
    if (n > cap) {
        n = cap;
    }
    for (size_t i = 0; i < n; i++) {
        out[i] = g_buckets[i].c;
    }
    pthread_mutex_unlock(&g_lock);
    return n;
}

const uintptr_t *pg_sampler_bucket_stack(size_t id, int *depth)
{
    if (id >= pg_sampler_bucket_count()) {
        *depth = 0;
        return NULL;
    }
    *depth = (int)g_buckets[id].depth;
    return &g_frames[g_buckets[id].frame_off];
}

static uint64_t pages(uint64_t bytes)
{
    return (bytes + 4095) / 4096 * 4096;
}

void pg_selfprof_get_stats(struct pg_selfprof_stats *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&g_lock);
    out->samples = g_samples;
    out->dropped = g_dropped;
    if (g_ready) {
        size_t nb = atomic_load(&g_nbuckets);
        out->buckets = nb - 1;
        out->frames = g_nframes;
        out->live = g_live.n;
        out->live_capacity = g_live.cap;
        out->table_bytes = sizeof(pg_sampler_filter_) + INDEX_SLOTS * sizeof(*g_index) +
                           pages(nb * sizeof(*g_buckets)) + pages(g_nframes * sizeof(*g_frames)) +
                           g_live.cap * sizeof(*g_live.slots);
    }
    pthread_mutex_unlock(&g_lock);
}

/* ---- fork ---------------------------------------------------------------------------- */

static void fork_prepare(void)
{
    pthread_mutex_lock(&g_lock);
}

static void fork_release(void)
{
    pthread_mutex_unlock(&g_lock);
}

__attribute__((constructor)) static void sampler_init(void)
{
    /* A fork while another thread holds the lock would leave the child's copy
     * locked forever; holding it across fork keeps the tables consistent. */
    pthread_atfork(fork_prepare, fork_release, fork_release);
}
