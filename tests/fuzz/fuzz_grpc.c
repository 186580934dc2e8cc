/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the OTLP exporter's gRPC response parsers: the
 * length-prefixed message reader (fed in two chunks at a fuzzer-chosen
 * split), grpc-status / grpc-timeout / grpc-message header values,
 * grpc-status-details-bin (base64 + google.rpc.Status/RetryInfo) and the
 * capped gunzip used for compressed responses. First byte picks the split. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/grpc_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pg_grpc_reader r;
    struct pg_grpc_status_details det;
    struct pg_status st;
    size_t split;
    char *text;
    uint8_t *bin;
    size_t bin_len = 0;
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
    bin = malloc(size * 3 / 4 + 3);
    if (bin != NULL && pg_base64_decode(text, size, bin, &bin_len)) {
        if (bin_len > size * 3 / 4 + 3) {
            abort();
        }
        (void)pg_grpc_status_details_parse(bin, bin_len, &det);
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
