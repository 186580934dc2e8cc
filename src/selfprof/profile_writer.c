/* SPDX-License-Identifier: Apache-2.0
 * Turns the sampler's tables into a gzip'd pprof heap profile shaped like
 * Go's: four sample types, space/bytes period, mappings from /proc/self/maps
 * with GNU build ids, return addresses minus one, function names filled in.
 * A small hand-written protobuf encoder writes into the caller's arena. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codec/gzip.h"
#include "core/clock.h"
#include "core/pb_wire.h"
#include "core/vec.h"
#include "selfprof/sampler.h"
#include "selfprof/selfprof.h"

struct pg_selfprof_snapshot {
    uint64_t time_ns;
    size_t n;
    struct pg_sampler_counts c[]; /* indexed by bucket id */
};

struct pg_selfprof_snapshot *pg_selfprof_snapshot_take(void)
{
    for (int attempt = 0; attempt < 4; attempt++) {
        size_t cap = pg_sampler_bucket_count() + 64; /* room for buckets born meanwhile */
        struct pg_selfprof_snapshot *s = malloc(sizeof(*s) + cap * sizeof(s->c[0]));
        if (s == NULL) {
            return NULL;
        }
        s->time_ns = (uint64_t)pg_real_ns();
        s->n = pg_sampler_snapshot(s->c, cap);
        if (s->n < cap || attempt == 3) {
            return s;
        }
        free(s);
    }
    return NULL;
}

void pg_selfprof_snapshot_free(struct pg_selfprof_snapshot *s)
{
    free(s);
}

/* ---- protobuf encoding into an arena ---------------------------------------- */

struct pb {
    struct pg_arena *arena;
    uint8_t *p;
    size_t len, cap;
    bool oom;
};

static void pb_reserve(struct pb *b, size_t more)
{
    if (!b->oom && (b->len + more < b->len ||
                    !PG_VEC_RESERVE(b->arena, b->p, b->cap, b->len + more, 512, 0))) {
        b->oom = true;
    }
}

static void pb_raw(struct pb *b, const void *data, size_t n)
{
    pb_reserve(b, n);
    if (!b->oom && n > 0) {
        memcpy(b->p + b->len, data, n);
        b->len += n;
    }
}

static void pb_varint(struct pb *b, uint64_t v)
{
    uint8_t tmp[10];

    pb_raw(b, tmp, (size_t)(pg_pb_put_varint(tmp, v) - tmp));
}

/* A varint field; zero is the proto3 default and is left out. */
static void pb_uint(struct pb *b, unsigned field, uint64_t v)
{
    if (v != 0) {
        pb_varint(b, pg_pb_key(field, PG_PB_VARINT));
        pb_varint(b, v);
    }
}

static void pb_bytes(struct pb *b, unsigned field, const void *data, size_t n)
{
    pb_varint(b, pg_pb_key(field, PG_PB_LEN));
    pb_varint(b, n);
    pb_raw(b, data, n);
}

/* Appends @sub as a length-delimited field and empties it for reuse. */
static void pb_sub(struct pb *b, unsigned field, struct pb *sub)
{
    if (sub->oom) {
        b->oom = true;
    }
    pb_bytes(b, field, sub->p, sub->len);
    sub->len = 0;
}

/* ---- string table ------------------------------------------------------------------ */

struct strtab {
    struct pg_arena *arena;
    const char **strs; /* by index */
    size_t n, cap;     /* cap: max strings */
    uint32_t *slots;   /* hash slots: index + 1 */
    size_t nslots;
};

static bool strtab_init(struct strtab *t, struct pg_arena *a, size_t cap)
{
    t->arena = a;
    t->cap = cap;
    t->n = 0;
    t->nslots = 16;
    while (t->nslots < cap * 2) {
        t->nslots *= 2;
    }
    t->strs = pg_arena_calloc(a, cap, sizeof(*t->strs));
    t->slots = pg_arena_calloc(a, t->nslots, sizeof(*t->slots));
    return t->strs != NULL && t->slots != NULL;
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 0xCBF29CE484222325ull;
    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 0x100000001B3ull;
    }
    return h;
}

/* Returns the index of @s (borrowed: must outlive the encoding). */
static int64_t strtab_add(struct strtab *t, const char *s)
{
    size_t mask = t->nslots - 1;
    for (size_t i = (size_t)str_hash(s) & mask;; i = (i + 1) & mask) {
        if (t->slots[i] == 0) {
            if (t->n >= t->cap) {
                return 0; /* cannot happen: sized from the counts below */
            }
            t->strs[t->n] = s;
            t->slots[i] = (uint32_t)++t->n;
            return (int64_t)t->n - 1;
        }
        if (strcmp(t->strs[t->slots[i] - 1], s) == 0) {
            return (int64_t)t->slots[i] - 1;
        }
    }
}

/* ---- mappings ------------------------------------------------------------------------ */

struct mapping {
    uint64_t start, limit, offset;
    const char *path; /* in the arena */
    char build_id[2 * 64 + 1];
    bool all_named; /* every location in it got a function name */
    bool used;
};

#define MAX_OBJECTS 512
#define MAX_MAPPINGS 1024

struct object {
    uintptr_t lo, hi; /* an executable PT_LOAD segment */
    uint8_t id[64];
    size_t id_len;
};

struct objects {
    struct object v[MAX_OBJECTS];
    size_t n;
};

static size_t note_build_id(const uint8_t *p, size_t len, uint8_t *out)
{
    size_t off = 0;
    while (off + sizeof(ElfW(Nhdr)) <= len) {
        const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(p + off);
        size_t name_sz = (nh->n_namesz + 3u) & ~3u;
        size_t desc_sz = (nh->n_descsz + 3u) & ~3u;
        size_t body = off + sizeof(*nh);
        if (name_sz > len - body || desc_sz > len - body - name_sz) {
            break;
        }
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
            memcmp(p + body, "GNU", 4) == 0 && nh->n_descsz > 0 && nh->n_descsz <= 64) {
            memcpy(out, p + body + name_sz, nh->n_descsz);
            return nh->n_descsz;
        }
        off = body + name_sz + desc_sz;
    }
    return 0;
}

/* Reads build ids from the PT_NOTE segments already in memory: no file I/O. */
static int objects_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct objects *objs = arg;
    uint8_t id[64];
    size_t id_len = 0;
    for (int i = 0; i < info->dlpi_phnum && id_len == 0; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE) {
            id_len = note_build_id((const uint8_t *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, id);
        }
    }
    for (int i = 0; i < info->dlpi_phnum && objs->n < MAX_OBJECTS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            struct object *o = &objs->v[objs->n++];
            o->lo = info->dlpi_addr + ph->p_vaddr;
            o->hi = o->lo + ph->p_memsz;
            memcpy(o->id, id, id_len);
            o->id_len = id_len;
        }
    }
    return 0;
}

/* Reads /proc/self/maps into the arena (it has no size, so read until EOF). */
static char *read_maps(struct pg_arena *a, size_t *len)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return NULL;
    }
    size_t cap = 16384, n = 0;
    char *buf = pg_arena_alloc(a, cap);
    while (buf != NULL) {
        if (cap - n < 4096) {
            if (cap >= (8u << 20)) {
                break; /* absurd map count: keep what we have */
            }
            if (!PG_VEC_RESERVE(a, buf, cap, cap * 2, 0, 0)) {
                buf = NULL; /* as a failed first allocation: no maps */
            }
            continue;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break;
        }
        n += (size_t)r;
    }
    close(fd);
    if (buf != NULL) {
        buf[n] = '\0';
    }
    *len = n;
    return buf;
}

static size_t load_mappings(struct pg_arena *a, struct mapping *out, size_t cap)
{
    size_t len = 0;
    char *text = read_maps(a, &len);
    if (text == NULL) {
        return 0;
    }
    struct objects *objs = pg_arena_zalloc(a, sizeof(*objs));
    if (objs != NULL) {
        dl_iterate_phdr(objects_cb, objs);
    }
    size_t n = 0;
    for (char *line = text; *line != '\0' && n < cap;) {
        char *eol = strchr(line, '\n');
        if (eol != NULL) {
            *eol = '\0';
        }
        /* start-end perms offset dev inode path */
        char *end;
        unsigned long long start = strtoull(line, &end, 16);
        unsigned long long limit = *end == '-' ? strtoull(end + 1, &end, 16) : 0;
        char perms[5] = {0};
        if (*end == ' ') {
            memcpy(perms, end + 1, 4);
            end += 5;
        }
        unsigned long long off = strtoull(end, &end, 16);
        /* skip dev and inode */
        char *path = end;
        for (int f = 0; f < 2 && *path; f++) {
            while (*path == ' ') {
                path++;
            }
            while (*path && *path != ' ') {
                path++;
            }
        }
        while (*path == ' ') {
            path++;
        }
        if (perms[2] == 'x' && limit > start) {
            struct mapping *m = &out[n++];
            memset(m, 0, sizeof(*m));
            m->start = start;
            m->limit = limit;
            m->offset = off;
            m->path = pg_arena_strdup(a, path);
            m->all_named = true;
            for (size_t i = 0; objs != NULL && i < objs->n; i++) {
                if (start >= objs->v[i].lo && start < objs->v[i].hi) {
                    for (size_t k = 0; k < objs->v[i].id_len; k++) {
                        static const char hex[] = "0123456789abcdef";
                        m->build_id[2 * k] = hex[objs->v[i].id[k] >> 4];
                        m->build_id[2 * k + 1] = hex[objs->v[i].id[k] & 15];
                    }
                    break;
                }
            }
            if (m->path == NULL) {
                m->path = "";
            }
        }
        if (eol == NULL) {
            break;
        }
        line = eol + 1;
    }
    return n;
}

static size_t find_mapping(const struct mapping *m, size_t n, uint64_t addr)
{
    for (size_t i = 0; i < n; i++) { /* few dozen mappings: linear is fine */
        if (addr >= m[i].start && addr < m[i].limit) {
            return i + 1;
        }
    }
    return 0;
}

/* ---- locations ------------------------------------------------------------------------ */

struct loc {
    uint64_t addr;      /* return address - 1 */
    size_t mapping;     /* 1-based, 0 = none */
    const char *name;   /* or NULL */
    uint64_t func_id;   /* 0 = none */
};

struct loctab {
    struct loc *v;
    size_t n, cap;
    uint32_t *slots; /* index + 1 */
    size_t nslots;
};

static uint64_t loc_id(struct loctab *t, uint64_t addr)
{
    size_t mask = t->nslots - 1;
    for (size_t i = (size_t)((addr * 0x9E3779B97F4A7C15ull) >> 17) & mask;; i = (i + 1) & mask) {
        if (t->slots[i] == 0) {
            if (t->n >= t->cap) {
                return 0;
            }
            t->v[t->n].addr = addr;
            t->slots[i] = (uint32_t)++t->n;
            return t->n;
        }
        if (t->v[t->slots[i] - 1].addr == addr) {
            return t->slots[i];
        }
    }
}

/* ---- the profile -------------------------------------------------------------------------- */

static void value_type(struct pb *out, struct pb *tmp, unsigned field, int64_t type, int64_t unit)
{
    pb_uint(tmp, 1, (uint64_t)type);
    pb_uint(tmp, 2, (uint64_t)unit);
    pb_sub(out, field, tmp);
}

static int64_t rounded(double v)
{
    return (int64_t)llround(v);
}

enum pg_err pg_selfprof_write_delta(struct pg_arena *arena, enum pg_selfprof_view view,
                                    const struct pg_selfprof_snapshot *base, uint8_t **out,
                                    size_t *len, struct pg_status *st)
{
    struct pg_selfprof_snapshot *snap = pg_selfprof_snapshot_take();
    if (snap == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "heap profile: out of memory for the snapshot");
    }
    enum pg_err rc = PG_ERR_NOMEM;
    const char *what = "sample arrays";
    size_t nb = snap->n;
    int64_t (*vals)[4] = pg_arena_calloc(arena, nb ? nb : 1, sizeof(*vals));
    bool *keep = pg_arena_calloc(arena, nb ? nb : 1, sizeof(*keep));
    if (vals == NULL || keep == NULL) {
        goto fail;
    }
    size_t total_frames = 0;
    for (size_t i = 0; i < nb; i++) {
        struct pg_sampler_counts c = snap->c[i];
        if (base != NULL && i < base->n) {
            c.alloc_objects -= base->c[i].alloc_objects;
            c.alloc_bytes -= base->c[i].alloc_bytes;
            c.inuse_objects -= base->c[i].inuse_objects;
            c.inuse_bytes -= base->c[i].inuse_bytes;
        }
        vals[i][0] = rounded(c.alloc_objects);
        vals[i][1] = rounded(c.alloc_bytes);
        vals[i][2] = rounded(c.inuse_objects);
        vals[i][3] = rounded(c.inuse_bytes);
        keep[i] = vals[i][0] || vals[i][1] || vals[i][2] || vals[i][3];
        if (keep[i]) {
            int depth;
            pg_sampler_bucket_stack(i, &depth);
            total_frames += (size_t)depth;
        }
    }

    /* Locations: one per distinct address. */
    struct loctab lt = {0};
    lt.cap = total_frames ? total_frames : 1;
    lt.nslots = 16;
    while (lt.nslots < lt.cap * 2) {
        lt.nslots *= 2;
    }
    lt.v = pg_arena_calloc(arena, lt.cap, sizeof(*lt.v));
    lt.slots = pg_arena_calloc(arena, lt.nslots, sizeof(*lt.slots));
    uint64_t **stacks = pg_arena_calloc(arena, nb ? nb : 1, sizeof(*stacks));
    if (lt.v == NULL || lt.slots == NULL || stacks == NULL) {
        goto fail;
    }
    for (size_t i = 0; i < nb; i++) {
        int depth;
        const uintptr_t *pcs = pg_sampler_bucket_stack(i, &depth);
        if (!keep[i] || depth == 0) {
            continue;
        }
        stacks[i] = pg_arena_alloc(arena, (size_t)depth * sizeof(uint64_t));
        if (stacks[i] == NULL) {
            goto fail;
        }
        for (int k = 0; k < depth; k++) {
            /* Every frame of a heap stack is a return address: -1 lands in the call. */
            stacks[i][k] = loc_id(&lt, (uint64_t)pcs[k] - 1);
        }
    }

    what = "mappings";
    struct mapping *maps = pg_arena_calloc(arena, MAX_MAPPINGS, sizeof(*maps));
    if (maps == NULL) {
        goto fail;
    }
    size_t nmaps = load_mappings(arena, maps, MAX_MAPPINGS);

    what = "strings";
    struct strtab strs;
    if (!strtab_init(&strs, arena, 32 + lt.n + 2 * nmaps)) {
        goto fail;
    }
    strtab_add(&strs, "");
    int64_t s_alloc_objects = strtab_add(&strs, "alloc_objects");
    int64_t s_count = strtab_add(&strs, "count");
    int64_t s_alloc_space = strtab_add(&strs, "alloc_space");
    int64_t s_bytes = strtab_add(&strs, "bytes");
    int64_t s_inuse_objects = strtab_add(&strs, "inuse_objects");
    int64_t s_inuse_space = strtab_add(&strs, "inuse_space");
    int64_t s_space = strtab_add(&strs, "space");

    /* Names: a function per distinct name, indexed by its string index. */
    uint64_t *func_of_str = pg_arena_calloc(arena, strs.cap, sizeof(*func_of_str));
    int64_t *func_names = pg_arena_calloc(arena, lt.n + 1, sizeof(*func_names));
    if (func_of_str == NULL || func_names == NULL) {
        goto fail;
    }
    size_t nfuncs = 0;
    for (size_t i = 0; i < lt.n; i++) {
        struct loc *l = &lt.v[i];
        l->mapping = find_mapping(maps, nmaps, l->addr);
        l->name = pg_selfprof_symbolize((uintptr_t)l->addr);
        if (l->mapping != 0) {
            maps[l->mapping - 1].used = true;
            if (l->name == NULL) {
                maps[l->mapping - 1].all_named = false;
            }
        }
        if (l->name != NULL) {
            int64_t si = strtab_add(&strs, l->name);
            if (func_of_str[si] == 0) {
                func_names[nfuncs] = si;
                func_of_str[si] = ++nfuncs;
            }
            l->func_id = func_of_str[si];
        }
    }

    what = "the encoding";
    struct pb body = {arena, NULL, 0, 0, false};
    struct pb tmp = {arena, NULL, 0, 0, false};
    struct pb packed = {arena, NULL, 0, 0, false};
    value_type(&body, &tmp, 1, s_alloc_objects, s_count);
    value_type(&body, &tmp, 1, s_alloc_space, s_bytes);
    value_type(&body, &tmp, 1, s_inuse_objects, s_count);
    value_type(&body, &tmp, 1, s_inuse_space, s_bytes);
    for (size_t i = 0; i < nb; i++) {
        if (!keep[i]) {
            continue;
        }
        int depth;
        pg_sampler_bucket_stack(i, &depth);
        for (int k = 0; k < depth && stacks[i] != NULL; k++) {
            pb_varint(&packed, stacks[i][k]);
        }
        if (packed.len > 0) {
            pb_sub(&tmp, 1, &packed);
        }
        for (int k = 0; k < 4; k++) {
            pb_varint(&packed, (uint64_t)vals[i][k]);
        }
        pb_sub(&tmp, 2, &packed);
        pb_sub(&body, 2, &tmp);
    }
    for (size_t i = 0; i < nmaps; i++) {
        struct mapping *m = &maps[i];
        pb_uint(&tmp, 1, i + 1);
        pb_uint(&tmp, 2, m->start);
        pb_uint(&tmp, 3, m->limit);
        pb_uint(&tmp, 4, m->offset);
        pb_uint(&tmp, 5, (uint64_t)strtab_add(&strs, m->path));
        pb_uint(&tmp, 6, m->build_id[0] ? (uint64_t)strtab_add(&strs, m->build_id) : 0);
        /* Only claim names where every location got one: pprof then skips
         * its own symbolization (and symbolz) for this mapping. */
        pb_uint(&tmp, 7, m->used && m->all_named);
        pb_sub(&body, 3, &tmp);
    }
    for (size_t i = 0; i < lt.n; i++) {
        const struct loc *l = &lt.v[i];
        pb_uint(&tmp, 1, i + 1);
        pb_uint(&tmp, 2, l->mapping);
        pb_uint(&tmp, 3, l->addr);
        if (l->func_id != 0) {
            pb_uint(&packed, 1, l->func_id);
            pb_sub(&tmp, 4, &packed);
        }
        pb_sub(&body, 4, &tmp);
    }
    for (size_t i = 0; i < nfuncs; i++) {
        pb_uint(&tmp, 1, i + 1);
        pb_uint(&tmp, 2, (uint64_t)func_names[i]);
        pb_uint(&tmp, 3, (uint64_t)func_names[i]);
        pb_sub(&body, 5, &tmp);
    }
    for (size_t i = 0; i < strs.n; i++) {
        pb_bytes(&body, 6, strs.strs[i], strlen(strs.strs[i]));
    }
    pb_uint(&body, 9, snap->time_ns);
    if (base != NULL) {
        pb_uint(&body, 10, snap->time_ns > base->time_ns ? snap->time_ns - base->time_ns : 0);
    }
    value_type(&body, &tmp, 11, s_space, s_bytes);
    uint64_t rate = pg_selfprof_rate();
    pb_uint(&body, 12, rate ? rate : PG_SELFPROF_DEFAULT_RATE);
    pb_uint(&body, 14, (uint64_t)(view == PG_SELFPROF_ALLOCS ? s_alloc_space : s_inuse_space));
    if (body.oom || tmp.oom || packed.oom) {
        goto fail;
    }
    pg_selfprof_snapshot_free(snap);
    return pg_gzip_compress(arena, body.p, body.len, PG_GZIP_LEVEL_DEFAULT, out, len, st);

fail:
    pg_selfprof_snapshot_free(snap);
    if (pg_arena_hit_cap(arena)) {
        rc = PG_ERR_LIMIT;
        return pg_status_set(st, rc, "heap profile: arena cap reached while building %s", what);
    }
    return pg_status_set(st, rc, "heap profile: out of memory while building %s", what);
}

enum pg_err pg_selfprof_write(struct pg_arena *arena, enum pg_selfprof_view view, uint8_t **out,
                              size_t *len, struct pg_status *st)
{
    return pg_selfprof_write_delta(arena, view, NULL, out, len, st);
}
