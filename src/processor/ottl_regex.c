/* SPDX-License-Identifier: Apache-2.0
 * OTTL-lite regex matching: the per-thread match data and the search with
 * the compiled limits. Compiled patterns are shared by every loop; match
 * data is per thread. */
#include <pthread.h>
#include <string.h>

#include "processor/ottl_internal.h"

/* This thread's match data: the pointer in a thread-local for speed, the
 * key only to free it when a loop thread ends. */
static __thread pcre2_match_data *tl_md;
static pthread_key_t md_key;
static pthread_once_t md_once = PTHREAD_ONCE_INIT;

static void md_free(void *p)
{
    pcre2_match_data_free(p);
}

static void md_key_init(void)
{
    (void)pthread_key_create(&md_key, md_free);
}

pcre2_match_data *pg_ottl_regex_md(const struct ottl_regex *re)
{
    pcre2_match_data *md = tl_md;
    uint32_t n;

    if (md != NULL && pcre2_get_ovector_count(md) >= re->pairs) {
        return md;
    }
    n = re->pairs < 16 ? 16 : re->pairs;
    md = pcre2_match_data_create(n, NULL);
    if (md == NULL) {
        return NULL;
    }
    (void)pthread_once(&md_once, md_key_init);
    if (tl_md != NULL) {
        pcre2_match_data_free(tl_md);
    }
    tl_md = md;
    (void)pthread_setspecific(md_key, md);
    return md;
}

void pg_ottl_regex_ready(struct ottl_regex *re)
{
    uint32_t caps = 0;
    pcre2_match_data *md;

    (void)pcre2_pattern_info(re->code, PCRE2_INFO_CAPTURECOUNT, &caps);
    re->pairs = caps + 1;
    md = pg_ottl_regex_md(re);
    if (md != NULL) {
        /* Warm this thread's match data so later matches reuse its frames. */
        (void)pcre2_match(re->code, (PCRE2_SPTR) "", 0, 0, 0, md, re->mctx);
    }
}

int pg_ottl_regex_search(const struct ottl_regex *re, const char *s, size_t n,
                         struct pg_status *st)
{
    pcre2_match_data *md = pg_ottl_regex_md(re);
    int rc;

    if (md == NULL) {
        pg_status_set(st, PG_ERR_NOMEM, "regex /%s/: out of memory", re->pattern);
        return -1;
    }
    rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, 0, 0, md, re->mctx);
    if (rc >= 0) {
        return 1;
    }
    if (rc == PCRE2_ERROR_NOMATCH) {
        return 0;
    }
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
        rc == PCRE2_ERROR_HEAPLIMIT) {
        pg_status_set(st, PG_ERR_PROCESSING, "regex /%s/ hit its match limit", re->pattern);
    } else {
        PCRE2_UCHAR msg[120];
        pcre2_get_error_message(rc, msg, sizeof(msg));
        pg_status_set(st, PG_ERR_PROCESSING, "regex /%s/: %s", re->pattern, (char *)msg);
    }
    return -1;
}
