/* SPDX-License-Identifier: Apache-2.0
 * The encoder's buffers: the size cache and scratch block of one encode,
 * kept per thread for the next small request (no malloc per SDK push) and
 * freed when the thread exits.
 * The leaf the other otlp_encode*.c files stand on. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "otlp/otlp_encode_internal.h"

/* The size cache and the scratch of a small request are kept for the next request on the
 * same thread instead of freed (no malloc per SDK push); freed when the thread exits. A
 * larger request's are freed, so a thread holds at most 48 KiB here. */
#define KEEP_SZ_CAP 4096
#define KEEP_SCR_CAP ((size_t)32 << 10)

struct enc_spare {
    uint32_t *sz;
    size_t cap;
    uint8_t *scr;
    size_t scr_cap;
};

static __thread struct enc_spare tl_enc;
static pthread_key_t enc_key;
static pthread_once_t enc_once = PTHREAD_ONCE_INIT;
static bool enc_key_ok;

static void enc_spare_free(void *arg)
{
    struct enc_spare *sp = arg;

    free(sp->sz);
    free(sp->scr);
    memset(sp, 0, sizeof(*sp));
}

static void enc_key_init(void)
{
    enc_key_ok = pthread_key_create(&enc_key, enc_spare_free) == 0;
}

void pg_enc_take(struct enc *e)
{
    e->sz = tl_enc.sz;
    e->cap = tl_enc.cap;
    e->scr = tl_enc.scr;
    e->scr_cap = tl_enc.scr_cap;
    memset(&tl_enc, 0, sizeof(tl_enc));
}

void pg_enc_give(struct enc *e)
{
    if (e->cap <= KEEP_SZ_CAP && e->scr_cap <= KEEP_SCR_CAP && tl_enc.sz == NULL &&
        tl_enc.scr == NULL) {
        (void)pthread_once(&enc_once, enc_key_init);
        /* the key's value only marks the thread for the exit-time free (set once) */
        if (enc_key_ok && (pthread_getspecific(enc_key) != NULL ||
                           pthread_setspecific(enc_key, &tl_enc) == 0)) {
            tl_enc.sz = e->sz;
            tl_enc.cap = e->cap;
            tl_enc.scr = e->scr;
            tl_enc.scr_cap = e->scr_cap;
            return;
        }
    }
    free(e->sz);
    free(e->scr);
}
