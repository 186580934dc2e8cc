/* SPDX-License-Identifier: Apache-2.0
 * The pprof sample iterator: samples stay encoded in the buffer and are
 * decoded one at a time (locations, values, labels), through a fast path for
 * the usual shapes and the general decoder for the rest. */
#include "pprof/pprof_decode.h"
#include "pprof/pprof_decode_internal.h"

#include <string.h>

enum pg_err pg_pprof_sample_iter_init(struct pg_arena *a, const struct pg_pprof *p,
                                      struct pg_pprof_sample_iter *it, struct pg_status *st)
{
    size_t max_ids = p->limits->max_stack_depth, max_labels = p->limits->max_labels_per_sample;

    memset(it, 0, sizeof(*it));
    it->r.p = p->buf;
    it->r.end = p->buf + p->len;
    /* Every id takes at least one byte, every label at least two: never
     * allocate more than the input could fill. One extra slot lets the
     * decoder notice "over the limit" without a special case. */
    if (max_ids > p->len) {
        max_ids = p->len;
    }
    if (max_labels > p->len / 2) {
        max_labels = p->len / 2;
    }
    it->cap_locations = max_ids;
    it->cap_labels = max_labels;
    it->s.location_ids = pg_arena_alloc(a, (max_ids + 1) * sizeof(uint64_t));
    it->s.labels = pg_arena_alloc(a, (max_labels + 1) * sizeof(struct pg_pprof_label));
    if (it->s.location_ids == NULL || it->s.labels == NULL) {
        return pg_status_set(st, pg_arena_hit_cap(a) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                             "pprof: no memory for the sample decoder");
    }
    return PG_ERR_OK;
}

static enum pg_err too_deep(const struct pg_pprof *p, size_t si, struct pg_status *st);

/* Appends the packed ids in @sub to s->location_ids. */
static enum pg_err decode_packed_locations(const struct pg_pprof *p,
                                           struct pg_pprof_sample_iter *it, struct pg_pb sub,
                                           size_t si, struct pg_status *st)
{
    struct pg_pprof_sample *s = &it->s;
    uint64_t v;

    while (sub.p < sub.end) {
        if (!pg_pb_varint(&sub, &v)) {
            return pg_pprof_err_bad(st, "packed sample.location_id", p, sub.p);
        }
        if (s->n_locations >= it->cap_locations) {
            return too_deep(p, si, st);
        }
        s->location_ids[s->n_locations++] = v;
    }
    return PG_ERR_OK;
}

/* Lazy mode: decodes the packed field held back by pg_pprof_next_sample. */
static enum pg_err flush_pending(const struct pg_pprof *p, struct pg_pprof_sample_iter *it,
                                 size_t si, struct pg_status *st)
{
    struct pg_pprof_sample *s = &it->s;
    struct pg_pb sub;

    if (s->loc_packed == NULL) {
        return PG_ERR_OK;
    }
    sub.p = s->loc_packed;
    sub.end = s->loc_packed + s->loc_packed_len;
    s->loc_packed = NULL;
    s->loc_packed_len = 0;
    return decode_packed_locations(p, it, sub, si, st);
}

enum pg_err pg_pprof_sample_locations(const struct pg_pprof *p, struct pg_pprof_sample_iter *it,
                                      struct pg_status *st)
{
    return flush_pending(p, it, it->index > 0 ? it->index - 1 : 0, st);
}

/* Labels are the hottest message (several per sample): decoded inline
 * rather than through decode_varints(). */
static enum pg_err decode_label(const struct pg_pprof *p, struct pg_pb r, size_t si,
                                struct pg_pprof_label *l, struct pg_status *st)
{
    static const char *const names[5] = {NULL, "key", "str", "num", "num_unit"};
    memset(l, 0, sizeof(*l));
    if (r.end - r.p >= 4 && r.p[0] == 0x08) {
        /* Fast path for the usual shape, {key, str} with 1-2 byte varints
         * (trace and span ids sit past string 127): same result as the loop. */
        struct pg_pb q = {r.p + 1, r.end};
        uint64_t k, v;
        if (pg_pb_varint(&q, &k) && q.p < q.end && q.p[0] == 0x10) {
            q.p++;
            if (pg_pb_varint(&q, &v) && q.p == q.end) {
                l->key = (int64_t)k;
                l->str = (int64_t)v;
                r.p = r.end;
            }
        }
    }
    while (r.p < r.end) {
        uint32_t f, wt;
        uint64_t v;
        const uint8_t *at = r.p;
        if (!pg_pb_tag(&r, &f, &wt)) {
            return pg_pprof_err_bad(st, "label", p, at);
        }
        if (f < 1 || f > 4) {
            if (!pg_pb_skip(&r, wt)) {
                return pg_pprof_err_bad(st, "label", p, at);
            }
            continue;
        }
        if (wt != PG_PB_VARINT) {
            return pg_pprof_err_wrong_wt(st, "Label", names[f], wt);
        }
        if (!pg_pb_varint(&r, &v)) {
            return pg_pprof_err_bad(st, "label", p, at);
        }
        switch (f) {
        case 1: l->key = (int64_t)v; break;
        case 2: l->str = (int64_t)v; break;
        case 3: l->num = (int64_t)v; break;
        default: l->num_unit = (int64_t)v; break;
        }
    }
    if (!str_ok(p, l->key) || !str_ok(p, l->str) || !str_ok(p, l->num_unit)) {
        int64_t idx = !str_ok(p, l->key) ? l->key : !str_ok(p, l->str) ? l->str : l->num_unit;
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "pprof: sample #%zu: label string index %lld out of range "
                             "(string_table has %zu entries)",
                             si, (long long)idx, p->n_strings);
    }
    return PG_ERR_OK;
}

static enum pg_err too_deep(const struct pg_pprof *p, size_t si, struct pg_status *st)
{
    return pg_status_set(st, PG_ERR_LIMIT,
                         "pprof: sample #%zu has more than %zu locations (limit max_stack_depth)",
                         si, p->limits->max_stack_depth);
}

/* One- or two-byte varint at *@q (before @end); false for anything longer or truncated. */
static inline bool small_varint(const uint8_t **q, const uint8_t *end, uint64_t *v)
{
    const uint8_t *c = *q;

    if (c < end && c[0] < 0x80) {
        *v = c[0];
        *q = c + 1;
        return true;
    }
    if (end - c >= 2 && c[1] < 0x80) {
        *v = (uint64_t)(c[0] & 0x7f) | (uint64_t)c[1] << 7;
        *q = c + 2;
        return true;
    }
    return false;
}

/* A varint of up to eight bytes that must end before @end, by one 8-byte load at *@q (the
 * caller guarantees *@q + 8 <= @readable: bytes past @end are masked off, never used).
 * Sample values (nanoseconds, bytes) are 3-5 byte varints, which the bytewise loop in
 * pg_pb_varint decodes at ~70 instructions. False when longer or past @end. */
static inline bool varint_word(const uint8_t **q, const uint8_t *end, uint64_t *v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w, m, x;
    size_t n;

    memcpy(&w, *q, 8);
    m = ~w & 0x8080808080808080ull; /* the stop bit of each byte that ends a varint */
    if (m == 0) {
        return false;
    }
    n = ((size_t)__builtin_ctzll(m) + 1) >> 3;
    if (n > (size_t)(end - *q)) {
        return false;
    }
    /* keep the bytes up to the first stop, then squeeze out every byte's top bit */
    x = w & (m ^ (m - 1)) & 0x7f7f7f7f7f7f7f7full;
    x = (x & 0x007f007f007f007full) | ((x & 0x7f007f007f007f00ull) >> 1);
    x = (x & 0x00003fff00003fffull) | ((x & 0x3fff00003fff0000ull) >> 2);
    x = (x & 0x000000000fffffffull) | ((x & 0x0fffffff00000000ull) >> 4);
    *q += n;
    *v = x;
    return true;
#else
    (void)q;
    (void)end;
    (void)v;
    return false;
#endif
}

/* memcmp(a, b, n) == 0 for the short runs compared per sample (a sample's label bytes,
 * under 128), eight bytes per step, inline: the libc call cost more than the compare. */
static inline bool same_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
    uint64_t d = 0, x, y;
    size_t i = 0;

    for (; n - i >= 8; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        d |= x ^ y;
        if (d != 0) {
            return false;
        }
    }
    if (i < n) {
        if (n >= 8) { /* the last eight bytes, overlapping what was compared */
            memcpy(&x, a + n - 8, 8);
            memcpy(&y, b + n - 8, 8);
            d = x ^ y;
        } else {
            for (; i < n; i++) {
                d |= (uint64_t)(a[i] ^ b[i]);
            }
        }
    }
    return d == 0;
}

/* Length-delimited field with a one-byte tag @tag and a one-byte length at *@q. */
static inline bool short_len(const uint8_t **q, const uint8_t *end, uint8_t tag,
                             struct pg_pb *sub)
{
    const uint8_t *c = *q;

    if (end - c < 2 || !short_tag(c, tag) || c[1] > end - c - 2) {
        return false;
    }
    sub->p = c + 2;
    sub->end = sub->p + c[1];
    *q = sub->end;
    return true;
}

/* @l becomes the string label @k = @v (indexes into the string table). */
static inline void string_label(struct pg_pprof_label *l, uint64_t k, uint64_t v)
{
    l->key = (int64_t)k;
    l->str = (int64_t)v;
    l->num = 0;
    l->num_unit = 0;
}

/* The shape every SDK and Go's runtime/pprof write, in lazy-locations mode: one packed
 * location_id field, one packed value field holding exactly n_sample_types values, then
 * labels of the form {key, str} with one- or two-byte varints, all with one-byte lengths.
 * Fills it->s exactly as the general loop would; returns false without a trace for
 * anything else (including every malformed input), which the general loop then decodes
 * from the start and reports. */
static bool sample_fast(const struct pg_pprof *p, struct pg_pprof_sample_iter *it,
                        struct pg_pb r, int64_t *values)
{
    struct pg_pprof_sample *s = &it->s;
    const size_t nt = p->n_sample_types;
    const uint8_t *buf_end = p->buf + p->len; /* readable, for varint_word's whole word */
    struct pg_pb sub;
    size_t nv = 0, nl = 0;
    uint64_t v;
    const uint8_t *lab0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint8_t *vb;
    size_t vlen;
#endif

    if (!short_len(&r.p, r.end, 0x0a, &sub)) {
        return false;
    }
    s->loc_packed = sub.p;
    s->loc_packed_len = (size_t)(sub.end - sub.p);
    if (!short_len(&r.p, r.end, 0x12, &sub)) {
        return false;
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* Equal bytes are equal values, and samples often repeat theirs (an SDK's count of 1 and
     * its period): up to eight bytes compare in one load and mask against the last decoded
     * ones, whose values are then copied instead of decoded. */
    vb = sub.p;
    vlen = (size_t)(sub.end - sub.p);
    if (vlen == it->prev_values_len && vlen != 0 && buf_end - sub.p >= 8) {
        uint64_t w;
        memcpy(&w, sub.p, 8);
        if ((w & it->prev_values_mask) == it->prev_values_word) {
            const int64_t *pv = it->prev_values;
            for (size_t k = 0; k < nt; k++) { /* a few values: a libc call would cost more */
                values[k] = pv[k];
            }
            goto values_done;
        }
    }
#endif
    while (sub.p < sub.end) {
        if (nv >= nt) {
            return false;
        }
        if (sub.p[0] < 0x80) {
            v = *sub.p++;
        } else if ((size_t)(buf_end - sub.p) < 8 || !varint_word(&sub.p, sub.end, &v)) {
            if (!pg_pb_varint(&sub, &v)) {
                return false;
            }
        }
        values[nv++] = (int64_t)v;
    }
    if (nv != nt) {
        return false;
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    it->prev_values_len = 0;
    if (vlen <= 8 && buf_end - vb >= 8) {
        uint64_t w;
        memcpy(&w, vb, 8);
        it->prev_values = values;
        it->prev_values_mask = vlen == 8 ? ~0ull : (1ull << (8 * vlen)) - 1;
        it->prev_values_word = w & it->prev_values_mask;
        it->prev_values_len = vlen;
    }
values_done:
#endif
    /* Samples of one span often follow each other with the same labels: the decoded ones
     * are still in s->labels. */
    if (it->prev_labels != NULL && (size_t)(r.end - r.p) == it->prev_labels_len &&
        same_bytes(r.p, it->prev_labels, it->prev_labels_len)) {
        s->n_labels = it->s.n_labels;
        s->labels_same = true;
        return true;
    }
    it->prev_labels = NULL;
    it->prev_labels_len = (size_t)(r.end - r.p);
    lab0 = r.p;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* The two label encodings SDKs write, 1a 04 08 k 10 v and 1a 05 08 k 10 v0 v1 (a string
     * index past 127), each matched whole by one 8-byte load. Checked once for the run: every
     * load stays readable and at most (bytes / 6) labels fit under the cap; a label running
     * past the sample's end shows as the end overshot. */
    if (buf_end - r.end >= 8 && (size_t)(r.end - r.p) / 6 <= it->cap_labels) {
        const uint64_t ns = p->n_strings;
        struct pg_pprof_label *l = s->labels;
        const uint8_t *q = r.p;
        while (q < r.end) {
            uint64_t w, k;
            memcpy(&w, q, 8);
            k = (w >> 24) & 0xff;
            if ((w & 0x000080ff80ffffffull) == 0x000000100008041aull) {
                v = (w >> 40) & 0xff;
                q += 6;
            } else if ((w & 0x008080ff80ffffffull) == 0x000080100008051aull) {
                v = ((w >> 40) & 0x7f) | ((w >> 48) & 0xff) << 7;
                q += 7;
            } else {
                break;
            }
            if (k >= ns || v >= ns) {
                return false;
            }
            string_label(l, k, v);
            l++;
        }
        if (q > r.end) {
            return false;
        }
        r.p = q;
        nl = (size_t)(l - s->labels);
    }
#endif
    /* Anything else of the usual shape, one field at a time with every bound checked. */
    while (r.p < r.end) {
        struct pg_pprof_label *l = &s->labels[nl];
        uint64_t k;
        const uint8_t *q;
        if (nl >= it->cap_labels || !short_len(&r.p, r.end, 0x1a, &sub)) {
            return false;
        }
        q = sub.p;
        if (q >= sub.end || *q++ != 0x08 || !small_varint(&q, sub.end, &k) || q >= sub.end ||
            *q++ != 0x10 || !small_varint(&q, sub.end, &v) || q != sub.end ||
            k >= p->n_strings || v >= p->n_strings) {
            return false;
        }
        string_label(l, k, v);
        nl++;
    }
    s->n_labels = nl;
    it->prev_labels = lab0;
    return true;
}

static enum pg_err sample_general(const struct pg_pprof *p, struct pg_pprof_sample_iter *it,
                                  struct pg_pb r, int64_t *values, struct pg_status *st);

enum pg_err pg_pprof_next_sample(const struct pg_pprof *p, struct pg_pprof_sample_iter *it,
                                 int64_t *values, bool *done, struct pg_status *st)
{
    struct pg_pprof_sample *s = &it->s;
    struct pg_pb r;

    *done = false;
    if (it->r.p >= p->sample_run && it->r.p < p->sample_run_end) {
        /* inside the run the count pass framed: every field is a sample that fits */
        r.p = it->r.p + 2;
        r.end = r.p + it->r.p[1];
        it->r.p = r.end;
        goto found;
    }
    /* Find the next sample field (framing was validated by the count pass). */
    for (;;) {
        uint32_t f, wt;
        const uint8_t *at = it->r.p;
        if (short_len(&it->r.p, it->r.end, 0x12, &r)) {
            break; /* field 2 (sample) with a one-byte length: the usual case */
        }
        if (it->r.p >= it->r.end) {
            *done = true;
            return PG_ERR_OK;
        }
        if (!pg_pb_tag(&it->r, &f, &wt)) {
            return pg_pprof_err_bad(st, "field tag", p, at);
        }
        if (f == 2 && wt == PG_PB_LEN) {
            if (!pg_pb_len(&it->r, &r)) {
                return pg_pprof_err_bad(st, "sample", p, at);
            }
            break;
        }
        if (!pg_pb_skip(&it->r, wt)) {
            return pg_pprof_err_bad(st, "field", p, at);
        }
    }
found:
    s->n_locations = 0;
    s->values = values;
    s->labels_same = false;
    if (it->lazy_locations && sample_fast(p, it, r, values)) {
        it->index++;
        return PG_ERR_OK;
    }
    return sample_general(p, it, r, values, st);
}

/* Any sample shape, with every check and error message; out of line so the fast path's
 * caller stays small. */
__attribute__((noinline)) static enum pg_err sample_general(const struct pg_pprof *p,
                                                            struct pg_pprof_sample_iter *it,
                                                            struct pg_pb r, int64_t *values,
                                                            struct pg_status *st)
{
    struct pg_pprof_sample *s = &it->s;
    const size_t nt = p->n_sample_types;
    size_t nv = 0, si = it->index;
    enum pg_err err;

    it->prev_labels = NULL; /* the general loop overwrites s->labels */
    it->prev_values_len = 0;
    s->n_labels = 0;
    s->loc_packed = NULL;
    s->loc_packed_len = 0;
    while (r.p < r.end) {
        uint32_t f, wt;
        uint64_t v;
        struct pg_pb sub;
        const uint8_t *at = r.p;

        if (!pg_pb_tag(&r, &f, &wt)) {
            return pg_pprof_err_bad(st, "sample", p, at);
        }
        if (f == 1) {
            if (wt == PG_PB_VARINT) {
                if ((err = flush_pending(p, it, si, st)) != PG_ERR_OK) {
                    return err;
                }
                if (!pg_pb_varint(&r, &v)) {
                    return pg_pprof_err_bad(st, "sample.location_id", p, at);
                }
                if (s->n_locations >= it->cap_locations) {
                    return too_deep(p, si, st);
                }
                s->location_ids[s->n_locations++] = v;
            } else if (wt == PG_PB_LEN) {
                if (!pg_pb_len(&r, &sub)) {
                    return pg_pprof_err_bad(st, "sample.location_id", p, at);
                }
                if (it->lazy_locations && s->n_locations == 0 && s->loc_packed == NULL) {
                    s->loc_packed = sub.p; /* decoded on demand: the caller may know it */
                    s->loc_packed_len = (size_t)(sub.end - sub.p);
                    continue;
                }
                if ((err = flush_pending(p, it, si, st)) != PG_ERR_OK ||
                    (err = decode_packed_locations(p, it, sub, si, st)) != PG_ERR_OK) {
                    return err;
                }
            } else {
                return pg_pprof_err_wrong_wt(st, "Sample", "location_id", wt);
            }
        } else if (f == 2) {
            if (wt == PG_PB_VARINT) {
                if (!pg_pb_varint(&r, &v)) {
                    return pg_pprof_err_bad(st, "sample.value", p, at);
                }
                if (nv < nt) {
                    values[nv] = (int64_t)v;
                }
                nv++;
            } else if (wt == PG_PB_LEN) {
                if (!pg_pb_len(&r, &sub)) {
                    return pg_pprof_err_bad(st, "sample.value", p, at);
                }
                while (sub.p < sub.end) {
                    if (!pg_pb_varint(&sub, &v)) {
                        return pg_pprof_err_bad(st, "packed sample.value", p, sub.p);
                    }
                    if (nv < nt) {
                        values[nv] = (int64_t)v;
                    }
                    nv++;
                }
            } else {
                return pg_pprof_err_wrong_wt(st, "Sample", "value", wt);
            }
        } else if (f == 3) {
            if (wt != PG_PB_LEN) {
                return pg_pprof_err_wrong_wt(st, "Sample", "label", wt);
            }
            if (!pg_pb_len(&r, &sub)) {
                return pg_pprof_err_bad(st, "sample.label", p, at);
            }
            if (s->n_labels >= it->cap_labels) {
                return pg_status_set(st, PG_ERR_LIMIT,
                                     "pprof: sample #%zu has more than %zu labels (limit "
                                     "max_labels_per_sample)",
                                     si, p->limits->max_labels_per_sample);
            }
            if ((err = decode_label(p, sub, si, &s->labels[s->n_labels], st)) != PG_ERR_OK) {
                return err;
            }
            s->n_labels++;
        } else if (!pg_pb_skip(&r, wt)) {
            return pg_pprof_err_bad(st, "sample", p, at);
        }
    }
    if (nv != nt) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "pprof: sample #%zu has %zu values, want %zu (one per sample type)",
                             si, nv, nt);
    }
    it->index++;
    return PG_ERR_OK;
}
