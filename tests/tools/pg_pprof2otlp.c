/* SPDX-License-Identifier: Apache-2.0
 * Test helper: translates one pprof file (plain or gzip'd) with
 * pg_pprof_translate and writes the ExportProfilesServiceRequest bytes to
 * stdout (or -o FILE). Profile ids are zeroed with -z so outputs compare
 * byte for byte. Exit 1 with the translator's message on failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "otlp/dict.h"
#include "pprof/translate.h"

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0;

    if (f == NULL) {
        return NULL;
    }
    for (;;) {
        size_t r;
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            unsigned char *nb = realloc(buf, cap);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) {
            break;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    const char *in = NULL, *outp = NULL;
    int zero_ids = 0;
    struct pg_translate_opts o;
    struct pg_arena *a;
    struct pg_otlp_request *req;
    struct pg_status st;
    unsigned char *body, *enc;
    size_t len, n;
    FILE *out = stdout;

    pg_translate_opts_default(&o);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-z") == 0) {
            zero_ids = 1;
        } else if (strcmp(argv[i], "-p") == 0) {
            o.include_original_payload = true;
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            outp = argv[++i];
        } else if (in == NULL) {
            in = argv[i];
        } else {
            in = NULL;
            break;
        }
    }
    if (in == NULL) {
        fprintf(stderr, "usage: pg_pprof2otlp [-z] [-p] [-o OUT] FILE.pprof[.gz]\n");
        return 2;
    }
    body = slurp(in, &len);
    if (body == NULL) {
        fprintf(stderr, "pg_pprof2otlp: cannot read %s\n", in);
        return 2;
    }
    a = pg_arena_create(0);
    if (pg_pprof_translate(a, body, len, &o, &req, NULL, &st) != PG_ERR_OK) {
        fprintf(stderr, "pg_pprof2otlp: %s: %s\n", in, pg_status_text(&st));
        pg_arena_destroy(a);
        free(body);
        return 1;
    }
    if (pg_dict_validate(a, req, true, &st) != PG_ERR_OK) {
        fprintf(stderr, "pg_pprof2otlp: %s: invalid output: %s\n", in, pg_status_text(&st));
        pg_arena_destroy(a);
        free(body);
        return 1;
    }
    if (zero_ids) {
        const struct pg_otlp_scopeprof *sp = req->resource_profiles[0]->scope_profiles[0];
        for (size_t k = 0; k < sp->n_profiles; k++) {
            sp->profiles[k]->profile_id.len = 0;
        }
    }
    n = protobuf_c_message_get_packed_size(&req->base);
    enc = malloc(n ? n : 1);
    if (enc == NULL || protobuf_c_message_pack(&req->base, enc) != n) {
        fprintf(stderr, "pg_pprof2otlp: encoding failed\n");
        return 1;
    }
    if (outp != NULL && (out = fopen(outp, "wb")) == NULL) {
        fprintf(stderr, "pg_pprof2otlp: cannot write %s\n", outp);
        return 2;
    }
    if (fwrite(enc, 1, n, out) != n) {
        return 1;
    }
    if (out != stdout) {
        fclose(out);
    }
    free(enc);
    pg_arena_destroy(a);
    free(body);
    return 0;
}
