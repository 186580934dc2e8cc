/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the OTTL-lite statement parser: compiles arbitrary
 * text in every context mode (never crashes; a failure always carries a
 * column inside the text) and runs what compiles on a small batch, so the
 * evaluator sees the same inputs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "pipeline/batch.h"
#include "processor/ottl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct pg_batch *mk_batch(void)
{
    struct pg_arena *a = pg_arena_create(1u << 20);
    struct pg_otlp_request *req = pg_arena_zalloc(a, sizeof(*req));
    struct pg_otlp_resprof *rp = pg_arena_zalloc(a, sizeof(*rp));
    struct pg_otlp_scopeprof *sp = pg_arena_zalloc(a, sizeof(*sp));
    struct pg_otlp_profile *p = pg_arena_zalloc(a, sizeof(*p));
    struct pg_batch *b;

    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
        req);
    opentelemetry__proto__profiles__v1development__resource_profiles__init(rp);
    opentelemetry__proto__profiles__v1development__scope_profiles__init(sp);
    opentelemetry__proto__profiles__v1development__profile__init(p);
    sp->profiles = pg_arena_calloc(a, 1, sizeof(p));
    sp->profiles[0] = p;
    sp->n_profiles = 1;
    rp->scope_profiles = pg_arena_calloc(a, 1, sizeof(sp));
    rp->scope_profiles[0] = sp;
    rp->n_scope_profiles = 1;
    req->resource_profiles = pg_arena_calloc(a, 1, sizeof(rp));
    req->resource_profiles[0] = rp;
    req->n_resource_profiles = 1;
    b = pg_batch_new(a, req);
    b->metadata.entries = pg_arena_calloc(a, 2, sizeof(struct pg_metadata_entry));
    b->metadata.entries[0].key = "otel-resource-attributes";
    b->metadata.entries[0].value = "service.name=a%20b,owner=o'brien,x=1";
    b->metadata.entries[1].key = "otel-resource-attributes";
    b->metadata.entries[1].value = "k=v";
    b->metadata.n = 2;
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum pg_ottl_ctx ctxs[] = {PG_OTTL_CTX_INFER, PG_OTTL_CTX_RESOURCE,
                                            PG_OTTL_CTX_SCOPE, PG_OTTL_CTX_PROFILE};
    char *text;

    if (size > 4096) {
        return 0;
    }
    text = malloc(size + 1);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0';
    for (size_t c = 0; c < sizeof(ctxs) / sizeof(ctxs[0]); c++) {
        struct pg_arena *ca = pg_arena_create(0);
        struct pg_ottl_error e;
        struct pg_ottl_stmt *s = pg_ottl_compile(ca, text, ctxs[c], &e);
        struct pg_ottl_cond *cond;

        if (s == NULL) {
            if (e.col < 0 || (size_t)e.col > strlen(text) || e.msg[0] == '\0') {
                abort(); /* every error must point into the statement */
            }
        } else {
            struct pg_batch *b = mk_batch();
            struct pg_ottl_env env;
            struct pg_status st;
            struct pg_otlp_resprof *rp = b->req->resource_profiles[0];
            pg_ottl_env_init(&env, b);
            env.rp = rp;
            env.sp = rp->scope_profiles[0];
            env.p = env.sp->profiles[0];
            (void)pg_ottl_exec(s, &env, &st);
            (void)pg_ottl_exec(s, &env, &st); /* again, on its own output */
            pg_batch_unref(b);
        }
        cond = pg_ottl_compile_condition(ca, text, ctxs[c], &e);
        if (cond == NULL && (e.col < 0 || (size_t)e.col > strlen(text))) {
            abort();
        }
        pg_arena_destroy(ca);
    }
    free(text);
    return 0;
}
