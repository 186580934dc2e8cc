/* SPDX-License-Identifier: Apache-2.0
 * Parses the Pyroscope `name` query value, "app.name{k=v,k2=v2}", into the application name
 * (profile-type suffix split off), the suffix and the labels, with Pyroscope's character
 * rules (its labelset parser) and stricter brace rules: a name it would half-read is refused. */
#include "pyroscope/pyro_name.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/utf8.h"
#include "pyroscope/pyro_type.h"

/* Byte classes, one table load per byte (the name is read on every push): built at compile
 * time from the rules, for every byte value 0..255. */
enum { C_LABEL = 1, C_APP = 2, C_SPACE = 4 };
#define IS_LABEL(c)                                                                       \
    (((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z') || ((c) >= '0' && (c) <= '9') || \
     (c) == '_' || (c) == '.')
#define IS_SPACE(c) ((c) == ' ' || ((c) >= '\t' && (c) <= '\r')) /* \t \n \v \f \r */
#define CLS(c)                                                                         \
    (uint8_t)((IS_LABEL(c) ? C_LABEL | C_APP : 0) | ((c) == '-' || (c) == '/' ? C_APP : 0) | \
              (IS_SPACE(c) ? C_SPACE : 0))
#define R4(n) CLS(n), CLS((n) + 1), CLS((n) + 2), CLS((n) + 3)
#define R16(n) R4(n), R4((n) + 4), R4((n) + 8), R4((n) + 12)
#define R64(n) R16(n), R16((n) + 16), R16((n) + 32), R16((n) + 48)
static const uint8_t byte_class[256] = {R64(0), R64(64), R64(128), R64(192)};

static bool is_space(char c)
{
    return (byte_class[(unsigned char)c] & C_SPACE) != 0;
}

static bool label_char(char c)
{
    return (byte_class[(unsigned char)c] & C_LABEL) != 0;
}

/* The end of the run of label-name bytes starting at @i of @s (bytes up to @lim may be
 * read): 16 bytes a step where SSE2 is there (an SDK name's keys are 3-23 bytes, and the
 * byte loop cost ~9 instructions a byte). */
static size_t label_run(const char *s, size_t i, size_t lim)
{
#if defined(__SSE2__)
    while (lim - i >= 16) {
        const __m128i w = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        /* unsigned x - lo <= hi - lo as min(x - lo, hi - lo) == x - lo; c | 0x20 folds case */
        const __m128i al = _mm_sub_epi8(_mm_or_si128(w, _mm_set1_epi8(0x20)), _mm_set1_epi8('a'));
        const __m128i dg = _mm_sub_epi8(w, _mm_set1_epi8('0'));
        const __m128i ok = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(al, _mm_set1_epi8(25)), al),
                         _mm_cmpeq_epi8(_mm_min_epu8(dg, _mm_set1_epi8(9)), dg)),
            _mm_or_si128(_mm_cmpeq_epi8(w, _mm_set1_epi8('_')), _mm_cmpeq_epi8(w, _mm_set1_epi8('.'))));
        unsigned stop = (unsigned)_mm_movemask_epi8(ok) ^ 0xffffu;

        if (stop != 0) {
            return i + (size_t)__builtin_ctz(stop);
        }
        i += 16;
    }
#endif
    while (i < lim && label_char(s[i])) {
        i++;
    }
    return i;
}

/* Pyroscope's service-name rule: a label-name character, or '-' or '/'. */
static bool app_char(char c)
{
    return (byte_class[(unsigned char)c] & C_APP) != 0;
}

bool pg_pyro_label_name_valid(const char *s, size_t n)
{
    if (n == 0) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!label_char(s[i])) {
            return false;
        }
    }
    return true;
}

bool pg_pyro_name_is_type_suffix(const char *suffix)
{
    return suffix != NULL && pg_pyro_type_lookup(suffix, strlen(suffix)) != NULL;
}

/* Narrows [*b, *e) past leading and trailing white space (Pyroscope trims each piece). */
static void trim(const char *s, size_t *b, size_t *e)
{
    while (*b < *e && is_space(s[*b])) {
        (*b)++;
    }
    while (*e > *b && is_space(s[*e - 1])) {
        (*e)--;
    }
}

/* The pieces are cut out of one arena copy of the name (@buf, same offsets as @s): each ends
 * where a delimiter or trimmed space was, so a NUL is written there instead of copying it. */
static enum pg_err parse_app(char *buf, const char *s, size_t b, size_t e,
                             struct pg_pyro_name *out, struct pg_status *st)
{
    trim(s, &b, &e);
    if (b == e) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "name: the application name before '{' is empty");
    }
    for (size_t i = b; i < e; i++) {
        if (!app_char(s[i])) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "name: byte 0x%02x at offset %zu is not allowed in an "
                                 "application name (Pyroscope allows A-Z a-z 0-9 _ . - /)",
                                 (unsigned)(unsigned char)s[i], i);
        }
    }
    /* The suffix after the last '.', when Pyroscope knows it as a profile type. */
    size_t dot = e;
    while (dot > b && s[dot - 1] != '.') {
        dot--;
    }
    size_t app_end = e;
    if (dot > b && pg_pyro_type_lookup(s + dot, e - dot) != NULL) {
        if (dot - 1 == b) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "name: nothing before the profile-type suffix \".%.*s\"",
                                 (int)(e - dot), s + dot);
        }
        buf[e] = '\0';
        out->type_suffix = buf + dot;
        app_end = dot - 1;
    }
    buf[app_end] = '\0';
    out->app = buf + b;
    return PG_ERR_OK;
}

/* The labels being collected (on the stack; the arena gets the final array). */
struct label_acc {
    struct pg_pyro_label l[PG_PYRO_MAX_LABELS];
    size_t klen[PG_PYRO_MAX_LABELS];
    size_t n;
    uint64_t seen; /* a bit per (key length, first byte) stored: most keys need no search */
    size_t lim;    /* the name's length: label_run may read that far */
    bool utf8; /* the whole list is valid UTF-8, so is every value: cut at ASCII delimiters */
};

static enum pg_err store_label(char *buf, const char *s, size_t kb, size_t ke, size_t vb,
                               size_t ve, struct label_acc *acc, struct pg_status *st);

/* One "key=value" item of the label list, [b, e) of @s; a repeated key keeps its first place
 * and takes the last value. */
static enum pg_err add_label(char *buf, const char *s, size_t b, size_t e, struct label_acc *acc,
                             struct pg_status *st)
{
    size_t kb = b, ke = b, vb, ve = e;

    /* The common item, "key=value" without spaces at its ends: the key's bytes are checked
     * on the way to its '=' and nothing needs trimming. */
    ke = label_run(s, kb, acc->lim); /* stops at @e at the latest: ',' and '}' end it */
    if (ke > kb && ke < e && s[ke] == '=' && !is_space(s[ke + 1]) && !is_space(s[e - 1])) {
        return store_label(buf, s, kb, ke, ke + 1, e, acc, st);
    }
    const char *eq = memchr(s + b, '=', e - b);

    if (eq == NULL) {
        trim(s, &kb, &ve);
        return pg_status_set(st, PG_ERR_MALFORMED, "name: label at offset %zu has no '=' (want k=v)",
                             kb);
    }
    ke = (size_t)(eq - s);
    vb = ke + 1;
    trim(s, &kb, &ke);
    trim(s, &vb, &ve);
    if (kb == ke) {
        return pg_status_set(st, PG_ERR_MALFORMED, "name: empty label name at offset %zu", kb);
    }
    uint8_t all = C_LABEL; /* no branch per byte; the offender is looked for only on failure */
    for (size_t i = kb; i < ke; i++) {
        all &= byte_class[(unsigned char)s[i]];
    }
    for (size_t i = kb; all == 0 && i < ke; i++) {
        if (!label_char(s[i])) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "name: byte 0x%02x at offset %zu is not allowed in a label "
                                 "name (Pyroscope allows A-Z a-z 0-9 _ .)",
                                 (unsigned)(unsigned char)s[i], i);
        }
    }
    return store_label(buf, s, kb, ke, vb, ve, acc, st);
}

/* The label [kb, ke) = [vb, ve) of @s (checked) into @acc: a repeated key keeps its first
 * place and takes the last value. */
static enum pg_err store_label(char *buf, const char *s, size_t kb, size_t ke, size_t vb,
                               size_t ve, struct label_acc *acc, struct pg_status *st)
{
    size_t klen = ke - kb;

    if (!acc->utf8 && !pg_utf8_valid(s + vb, ve - vb)) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "name: the value of label \"%.*s\" (offset %zu) is not valid UTF-8",
                             (int)(klen > 64 ? 64 : klen), s + kb, vb);
    }
    buf[ve] = '\0'; /* ve <= the ',' or '}' after the value; ke <= the '=' before it */
    uint64_t bit = 1ull << ((klen * 31 + (unsigned char)s[kb]) & 63);
    for (size_t i = 0; (acc->seen & bit) != 0 && i < acc->n; i++) {
        if (acc->klen[i] == klen && memcmp(acc->l[i].name, s + kb, klen) == 0) {
            acc->l[i].value = buf + vb;
            return PG_ERR_OK;
        }
    }
    if (acc->n == PG_PYRO_MAX_LABELS) {
        return pg_status_set(st, PG_ERR_LIMIT, "name: more than %d labels", PG_PYRO_MAX_LABELS);
    }
    acc->seen |= bit;
    buf[ke] = '\0';
    acc->l[acc->n].name = buf + kb;
    acc->l[acc->n].value = buf + vb;
    acc->klen[acc->n++] = klen;
    return PG_ERR_OK;
}

/* The label list between '{' at @open and '}' at @close (exclusive). */
static enum pg_err parse_labels(struct pg_arena *a, char *buf, const char *s, size_t len,
                                size_t open, size_t close, struct pg_pyro_name *out,
                                struct pg_status *st)
{
    struct label_acc acc;

    acc.n = 0;
    acc.seen = 0;
    acc.lim = len;
    acc.utf8 = pg_utf8_valid(s + open + 1, close - open - 1);
    for (size_t b = open + 1; b <= close;) {
        const char *comma = memchr(s + b, ',', close - b);
        size_t i = comma != NULL ? (size_t)(comma - s) : close;
        size_t kb = b, ke = i;

        if (b == i || is_space(s[b])) { /* else the item is not empty: no trim needed */
            trim(s, &kb, &ke);
        }
        /* "{}" and a trailing comma are fine (Pyroscope reads them); an empty item between
         * two commas is a label without a name. */
        if (kb == ke && i == close) {
            break;
        }
        if (kb == ke) {
            return pg_status_set(st, PG_ERR_MALFORMED, "name: empty label at offset %zu", b);
        }
        enum pg_err err = add_label(buf, s, b, i, &acc, st);
        if (err != PG_ERR_OK) {
            return err;
        }
        b = i + 1;
    }
    out->labels = pg_arena_alloc(a, (acc.n > 0 ? acc.n : 1) * sizeof(*out->labels));
    if (out->labels == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "name: out of memory");
    }
    memcpy(out->labels, acc.l, acc.n * sizeof(*out->labels));
    out->n_labels = acc.n;
    return PG_ERR_OK;
}

/* Checks the braces as a left-to-right scan would meet them (the first fault wins): a second
 * '{' before the '}', a '}' without '{', a NUL, a '{' never closed, text after the '}'. */
static enum pg_err check_braces(const char *s, size_t len, size_t *open_out, size_t *close_out,
                                struct pg_status *st)
{
    const char *o = memchr(s, '{', len), *c = memchr(s, '}', len), *z = memchr(s, '\0', len);
    size_t open = o != NULL ? (size_t)(o - s) : len, close = c != NULL ? (size_t)(c - s) : len;
    size_t nested = len, nul = z != NULL ? (size_t)(z - s) : len;

    if (open < close && open + 1 < len) {
        const char *o2 = memchr(s + open + 1, '{', close - open - 1);
        nested = o2 != NULL ? (size_t)(o2 - s) : len;
    }
    if (nested < close && nested < nul) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "name: nested '{' at offset %zu (braces must be one "
                             "{k=v,...} list)", nested);
    }
    if (nul < close) {
        return pg_status_set(st, PG_ERR_MALFORMED, "name: NUL byte at offset %zu", nul);
    }
    if (close < open) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "name: unbalanced braces: '}' at offset %zu has no '{'", close);
    }
    if (open != len && close == len) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "name: unbalanced braces: '{' at offset %zu is never closed", open);
    }
    for (size_t i = close + 1; i < len; i++) {
        if (!is_space(s[i])) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "name: text after the closing '}' at offset %zu", i);
        }
    }
    *open_out = open;
    *close_out = close;
    return PG_ERR_OK;
}

/* The checks both entry points make before a byte is cut. */
static enum pg_err name_check(const char *s, size_t len, size_t *open, size_t *close,
                              struct pg_status *st)
{
    if (len > PG_PYRO_MAX_NAME_LEN) {
        return pg_status_set(st, PG_ERR_LIMIT, "name: %zu bytes, over the cap of %u", len,
                             PG_PYRO_MAX_NAME_LEN);
    }
    if (s == NULL || len == 0) {
        return pg_status_set(st, PG_ERR_MALFORMED, "name: missing (want app.name{k=v,...})");
    }
    return check_braces(s, len, open, close, st);
}

/* @buf holds the name (@s, read) and gets the NULs that cut it (written): the same bytes
 * when parsing in place. A cut lands only on a delimiter or space already read. */
static enum pg_err name_pieces(struct pg_arena *a, char *buf, const char *s, size_t len,
                               size_t open, size_t close, struct pg_pyro_name *out,
                               struct pg_status *st)
{
    enum pg_err err = parse_app(buf, s, 0, open, out, st);

    if (err != PG_ERR_OK || open == len) {
        return err;
    }
    return parse_labels(a, buf, s, len, open, close, out, st);
}

enum pg_err pg_pyro_name_parse(struct pg_arena *a, const char *s, size_t len,
                               struct pg_pyro_name *out, struct pg_status *st)
{
    size_t open = len, close = len;
    char *buf;

    memset(out, 0, sizeof(*out));
    enum pg_err err = name_check(s, len, &open, &close, st);
    if (err != PG_ERR_OK) {
        return err;
    }
    buf = pg_arena_alloc(a, len + 1); /* every string of @out points into it */
    if (buf == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "name: out of memory");
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    return name_pieces(a, buf, s, len, open, close, out, st);
}

enum pg_err pg_pyro_name_parse_in(struct pg_arena *a, char *s, size_t len,
                                  struct pg_pyro_name *out, struct pg_status *st)
{
    size_t open = len, close = len;

    memset(out, 0, sizeof(*out));
    enum pg_err err = name_check(s, len, &open, &close, st);
    if (err != PG_ERR_OK) {
        return err;
    }
    return name_pieces(a, s, s, len, open, close, out, st);
}
