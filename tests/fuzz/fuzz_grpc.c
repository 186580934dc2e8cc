/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the OTLP exporter's gRPC response parsers: the
 * length-prefixed message reader (fed in two chunks at a fuzzer-chosen
 * split), grpc-status / grpc-timeout / grpc-message header values,
 * grpc-status-details-bin (base64 + google.rpc.Status/RetryInfo) and the
 * capped gunzip used for compressed responses. First byte picks the split.
 * Oracle for core/base64.c: strict decoding accepts a subset of lenient with
 * the same bytes, and encode + strict decode gives the bytes back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/gzip.h"
#include "core/base64.h"
#include "grpc/grpc_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Oracle for core/base64.c: @dec is the lenient decoding of @text. A strict
 * decoding, where it succeeds, gives the same bytes, and encoding @dec then
 * decoding it strictly gives @dec back. */
static void check_base64(const char *text, size_t size, const uint8_t *dec, size_t n)
{
    size_t elen = pg_base64_encoded_len(n) + 1;
    char *enc = malloc(elen);
    uint8_t *again = malloc(n + 3), *strict = malloc(pg_base64_decoded_max(size));
    long m;

    if (enc != NULL && again != NULL && strict != NULL) {
        if (pg_base64_encode(dec, n, enc, elen) != (long)elen - 1 ||
            pg_base64_decode(enc, elen - 1, PG_BASE64_STRICT, again, n + 3) != (long)n ||
            memcmp(again, dec, n) != 0) {
            abort();
        }
        m = pg_base64_decode(text, size, PG_BASE64_STRICT, strict, pg_base64_decoded_max(size));
        if (m >= 0 && (m != (long)n || memcmp(strict, dec, n) != 0)) {
            abort();
        }
    }
    free(enc);
    free(again);
    free(strict);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pg_grpc_reader r;
    struct pg_grpc_status_details det;
    struct pg_status st;
    size_t split;
    char *text;
    uint8_t *bin;
    uint8_t *out = NULL;
    size_t out_len = 0;
    int code;
    int64_t ns;

    if (size == 0) {
        return 0;
    }
    split = data[0] % size;
    data++;
    size--;

    /* Message framing, as DATA frames would deliver it. */
    pg_grpc_reader_init(&r, 1 << 16);
    if (pg_grpc_reader_feed(&r, data, split < size ? split : size, &st) == PG_ERR_OK &&
        split < size) {
        (void)pg_grpc_reader_feed(&r, data + split, size - split, &st);
    }
    if (pg_grpc_reader_done(&r) && r.compressed) {
        if (pg_gzip_decompress(r.buf, r.got, 1 << 16, &out, &out_len, &st) == PG_ERR_OK) {
            free(out);
        }
    }
    (void)pg_grpc_reader_partial(&r);
    pg_grpc_reader_free(&r);

    /* Header values. */
    text = malloc(size + 1);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0';
    (void)pg_grpc_status_parse(text, size, &code);
    (void)pg_grpc_timeout_parse(text, size, &ns);
    {
        char *msg = malloc(size + 1);

        if (msg != NULL) {
            size_t n = pg_grpc_message_decode(text, size, msg);

            if (n > size || msg[n] != '\0') {
                abort();
            }
            free(msg);
        }
    }
    bin = malloc(pg_base64_decoded_max(size));
    if (bin != NULL) {
        size_t cap = pg_base64_decoded_max(size);
        long n = pg_base64_decode(text, size, PG_BASE64_LENIENT, bin, cap);

        if (n >= 0) {
            (void)pg_grpc_status_details_parse(bin, (size_t)n, &det);
            check_base64(text, size, bin, (size_t)n);
        } else if (pg_base64_decode(text, size, PG_BASE64_STRICT, bin, cap) >= 0) {
            abort(); /* strict accepts a subset of what lenient accepts */
        }
    }
    free(bin);
    free(text);

    /* The raw bytes as a Status message and as a gzip stream. */
    if (pg_grpc_status_details_parse(data, size, &det) && det.retry_delay_ns < 0) {
        abort();
    }
    if (pg_gzip_decompress(data, size, 1 << 16, &out, &out_len, &st) == PG_ERR_OK) {
        if (out_len > (1 << 16)) {
            abort();
        }
        free(out);
    }
    return 0;
}
