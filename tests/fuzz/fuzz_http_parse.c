/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the HTTP/1.x request parser. The input is a request
 * as a client would send it: the head up to its blank line goes to
 * pg_http_parse_head (and pg_http_parse_head_in, which must agree with it),
 * the rest to the chunked decoder, fed in pieces whose
 * sizes come from the head's length. Invariants: an accepted head has a
 * method and target made of allowed bytes, never both framings, and no
 * header value holds CR, LF or NUL; the decoder always makes progress,
 * never reports more data than it consumed, and its body bytes are exactly
 * the input's data bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "http/http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
    if (!cond) {
        abort();
    }
}

static size_t head_len(const uint8_t *d, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (d[i] == '\n' && d[i + 1] == '\n') {
            return i + 2;
        }
        if (d[i] == '\n' && i + 2 < n && d[i + 1] == '\r' && d[i + 2] == '\n') {
            return i + 3;
        }
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pg_http_parse_limits lim = {2048, 64};
    size_t hl = head_len(data, size);
    char *head = malloc(hl + 1);
    struct evkeyvalq h;
    struct pg_http_head out;
    char why[200];
    int code;

    if (head == NULL) {
        return 0;
    }
    TAILQ_INIT(&h);
    memcpy(head, data, hl);
    head[hl] = '\0';
    code = pg_http_parse_head(head, hl, &lim, &h, &out, why, sizeof(why));
    if (code == 0) {
        const struct evkeyval *kv;

        check(out.method[0] != '\0' && out.target != NULL && out.target[0] != '\0');
        check(strlen(out.target) <= lim.max_target);
        check(!(out.chunked && out.content_length != PG_HTTP_NO_LENGTH));
        check(out.minor == 0 || out.minor == 1);
        TAILQ_FOREACH(kv, &h, next)
        {
            check(strpbrk(kv->value, "\r\n") == NULL && strpbrk(kv->key, "\r\n: ") == NULL);
        }
    } else {
        check(code >= 400 && code < 600 && why[0] != '\0');
    }
    {
        /* The allocation-free variant (the server's) agrees: same answer,
         * same header list, entries inside its own copy of the head. The
         * slots are exactly the head's line feeds: never too few. */
        char *head2 = malloc(hl + 1);
        size_t lines = pg_http_head_lines((const char *)data, hl);
        struct evkeyval *slots = malloc((lines + 1) * sizeof(*slots));
        struct evkeyvalq h2;
        struct pg_http_head out2;
        char why2[200];
        const struct evkeyval *a, *b;

        check(head2 != NULL && slots != NULL);
        TAILQ_INIT(&h2);
        memcpy(head2, data, hl);
        head2[hl] = '\0';
        check(pg_http_parse_head_in(head2, hl, &lim, &h2, slots, lines, &out2, why2,
                                    sizeof(why2)) == code);
        check(code == 0 || strcmp(why, why2) == 0);
        for (a = TAILQ_FIRST(&h), b = TAILQ_FIRST(&h2); code == 0 && a != NULL;
             a = TAILQ_NEXT(a, next), b = TAILQ_NEXT(b, next)) {
            check(b != NULL && b >= slots && b < slots + lines);
            check(b->key >= head2 && b->value >= head2 && b->value <= head2 + hl);
            check(strcmp(a->key, b->key) == 0 && strcmp(a->value, b->value) == 0);
        }
        check(code != 0 || b == NULL);
        free(slots);
        free(head2);
    }
    evhttp_clear_headers(&h);
    free(head);

    {
        struct pg_http_chunked ch = {0};
        const uint8_t *in = data + hl;
        size_t len = size - hl, pos = 0, step = 1 + hl % 7, total = 0;
        enum pg_http_chunk_rc rc = PG_HTTP_CHUNK_MORE;

        while (pos < len && rc == PG_HTTP_CHUNK_MORE) {
            size_t n = len - pos < step ? len - pos : step;
            size_t used = 0, dlen = 0;

            rc = pg_http_chunked_feed(&ch, in + pos, n, &used, &dlen, why, sizeof(why));
            check(used <= n && dlen <= used);
            check(rc != PG_HTTP_CHUNK_MORE || used > 0);
            total += dlen;
            pos += used;
        }
        check(total <= len);
    }
    return 0;
}
