/* SPDX-License-Identifier: Apache-2.0
 * The pprof receiver's self: source with the real sampler linked in: one
 * collection must push a translated OTLP batch carrying service.name and
 * profiler.type, with our own allocation site's name in the dictionary. */
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"
#include "receiver/pprof_self.h"
#include "selfprof/sampler.h"
#include "selfprof/selfprof.h"

struct capture {
    struct pg_consumer c;
    struct pg_batch *got;
    int calls;
};

static enum pg_err capture_consume(struct pg_consumer *self, struct pg_batch *b, struct pg_status *st)
{
    (void)st;
    struct capture *cap = (struct capture *)self;
    cap->calls++;
    if (cap->got == NULL) {
        cap->got = b; /* consumers take the caller's reference */
    } else {
        pg_batch_unref(b);
    }
    return PG_ERR_OK;
}

static void *volatile g_keep[256];

__attribute__((noinline, noipa)) static void site_self(int i)
{
    g_keep[i] = malloc(10000);
}

static const char *attr(const struct pg_otlp_resource *r, const char *key)
{
    for (size_t i = 0; r != NULL && i < r->n_attributes; i++) {
        const struct pg_otlp_kv *kv = r->attributes[i];
        if (strcmp(kv->key, key) == 0 && kv->value != NULL &&
            kv->value->value_case == PG_OTLP_ANYVALUE_STR) {
            return kv->value->string_value;
        }
    }
    return NULL;
}

PG_TEST(self_collection_reaches_the_pipeline)
{
    pg_selfprof_set_rate(1);
    pg_sampler_reset();
    for (int i = 0; i < 100; i++) {
        site_self(i);
    }
    struct capture cap = {{capture_consume, NULL, NULL, NULL}, NULL, 0};
    struct pg_pprof_self *s = pg_pprof_self_create(NULL, &cap.c, 60000000000LL, NULL);
    CHECK(s != NULL);
    struct pg_status st = {0};
    CHECK_INT(pg_pprof_self_collect(s, &st), PG_ERR_OK);
    CHECK_INT(cap.calls, 1);
    CHECK(cap.got != NULL);
    if (cap.got != NULL) {
        const struct pg_otlp_request *req = cap.got->req;
        CHECK_INT(req->n_resource_profiles, 1);
        const struct pg_otlp_resource *r = req->resource_profiles[0]->resource;
        CHECK_STR(attr(r, "service.name"), "pprofgate");
        CHECK_STR(attr(r, "profiler.type"), "heap");
        CHECK_INT(pg_batch_profile_count(cap.got), 4); /* one per sample type */
        CHECK(pg_batch_sample_count(cap.got) > 0);
        int named = 0;
        for (size_t i = 0; req->dictionary && i < req->dictionary->n_string_table; i++) {
            named |= strcmp(req->dictionary->string_table[i], "site_self") == 0;
        }
        CHECK(named);
        CHECK_STR(cap.got->receiver_id, "pprof/self");
        pg_batch_unref(cap.got);
    }
    /* sampler off: nothing is sent, and that is not an error */
    pg_selfprof_set_rate(0);
    cap.got = NULL;
    CHECK_INT(pg_pprof_self_collect(s, &st), PG_ERR_OK);
    CHECK_INT(cap.calls, 1);
    pg_pprof_self_destroy(s);
    for (int i = 0; i < 100; i++) {
        free(g_keep[i]);
    }
    pg_selfprof_set_rate(PG_SELFPROF_DEFAULT_RATE);
}

PG_TEST_MAIN(PG_CASE(self_collection_reaches_the_pipeline))
