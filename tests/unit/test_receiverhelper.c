/* SPDX-License-Identifier: Apache-2.0
 * receiverhelper/: every pg_err's HTTP status, gRPC code and retry delay
 * (the Collector's mapping), the HTTP -> gRPC code of a google.rpc.Status
 * body, the answer counters' series, the refusal log's one line per reason
 * (digits ignored) and gRPC metadata into batch metadata. */
#define _GNU_SOURCE /* fmemopen */
#include "pg_test.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/metrics.h"
#include "grpc/grpc_wire.h"
#include "receiverhelper/answer.h"
#include "receiverhelper/metadata.h"
#include "receiverhelper/refusal_log.h"

PG_TEST(test_err_mapping)
{
    static const struct {
        enum pg_err err;
        int http, grpc, retry_s;
    } cases[] = {
        {PG_ERR_OK, 500, PG_GRPC_OK, -1}, /* an error path never answers a 2xx */
        {PG_ERR_MALFORMED, 400, PG_GRPC_INVALID_ARGUMENT, -1},
        {PG_ERR_LIMIT, 413, PG_GRPC_RESOURCE_EXHAUSTED, -1},
        {PG_ERR_UNSUPPORTED, 415, PG_GRPC_UNIMPLEMENTED, -1},
        {PG_ERR_BUSY, 503, PG_GRPC_UNAVAILABLE, 1},
        {PG_ERR_UNAVAILABLE, 503, PG_GRPC_UNAVAILABLE, 1},
        {PG_ERR_IO, 500, PG_GRPC_UNAVAILABLE, -1},
        {PG_ERR_TIMEOUT, 504, PG_GRPC_DEADLINE_EXCEEDED, -1},
        {PG_ERR_NOMEM, 500, PG_GRPC_INTERNAL, -1},
        {PG_ERR_PROCESSING, 500, PG_GRPC_INTERNAL, -1},
        {PG_ERR_PERMANENT, 500, PG_GRPC_INTERNAL, -1},
        {PG_ERR_INTERNAL, 500, PG_GRPC_INTERNAL, -1},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CHECK_INT(pg_rxh_http_status(cases[i].err), cases[i].http);
        CHECK_INT(pg_rxh_grpc_code(cases[i].err), cases[i].grpc);
        CHECK_INT(pg_rxh_retry_after_s(cases[i].err), cases[i].retry_s);
    }
}

PG_TEST(test_http_to_grpc)
{
    static const int cases[][2] = {
        {200, PG_GRPC_OK},          {400, PG_GRPC_INVALID_ARGUMENT},
        {401, PG_GRPC_UNAUTHENTICATED}, {403, PG_GRPC_PERMISSION_DENIED},
        {404, PG_GRPC_UNIMPLEMENTED}, {413, PG_GRPC_UNKNOWN},
        {429, PG_GRPC_RESOURCE_EXHAUSTED}, {500, PG_GRPC_UNKNOWN},
        {502, PG_GRPC_UNAVAILABLE}, {503, PG_GRPC_UNAVAILABLE},
        {504, PG_GRPC_UNAVAILABLE},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CHECK_INT(pg_rxh_grpc_code_for_http(cases[i][0]), cases[i][1]);
    }
}

PG_TEST(test_code_counters)
{
    struct pg_rxh_codes tab;
    char text[8192] = "";
    FILE *f = fmemopen(text, sizeof(text) - 1, "w");

    memset(&tab, 0, sizeof(tab));
    pg_rxh_count(&tab, "pg_test_rxh_requests_total", "test", "otlp", "transport=\"grpc\"", 0);
    pg_rxh_count(&tab, "pg_test_rxh_requests_total", "test", "otlp", "transport=\"grpc\"", 0);
    pg_rxh_count(&tab, "pg_test_rxh_requests_total", "test", "otlp", "transport=\"grpc\"", 14);
    CHECK_INT((int)tab.n, 2);
    /* Past the table's room the series still counts (looked up each time). */
    for (int c = 100; c < 100 + PG_RXH_CODES + 4; c++) {
        pg_rxh_count(&tab, "pg_test_rxh_requests_total", "test", "pprof", NULL, c);
    }
    CHECK_INT((int)tab.n, PG_RXH_CODES);
    pg_rxh_count(&tab, "pg_test_rxh_requests_total", "test", "pprof", NULL, 100 + PG_RXH_CODES + 3);
    PG_REQUIRE(f != NULL);
    pg_metrics_render(f);
    fclose(f);
    CHECK(strstr(text, "pg_test_rxh_requests_total{receiver=\"otlp\",transport=\"grpc\","
                       "code=\"0\"} 2") != NULL);
    CHECK(strstr(text, "pg_test_rxh_requests_total{receiver=\"otlp\",transport=\"grpc\","
                       "code=\"14\"} 1") != NULL);
    CHECK(strstr(text, "pg_test_rxh_requests_total{receiver=\"pprof\",code=\"119\"} 2") != NULL);
}

PG_TEST(test_refusal_log)
{
    struct pg_rxh_reasons r;
    unsigned long sup = 99;

    pg_rxh_reasons_init(&r);
    CHECK(pg_rxh_reason_log_ok(&r, 400, "request body of 12 bytes", &sup));
    CHECK_INT((int)sup, 0);
    /* Same reason with other numbers: held back, counted. */
    CHECK(!pg_rxh_reason_log_ok(&r, 400, "request body of 345 bytes", &sup));
    CHECK(!pg_rxh_reason_log_ok(&r, 400, "request body of 6 bytes", &sup));
    /* Another code or another text: its own line. */
    CHECK(pg_rxh_reason_log_ok(&r, 413, "request body of 12 bytes", &sup));
    CHECK(pg_rxh_reason_log_ok(&r, 400, "garbage", &sup));
    /* Past the interval the next line reports what was held back. */
    for (size_t i = 0; i < PG_RXH_REASON_SLOTS; i++) {
        r.slot[i].last -= PG_RXH_REASON_INTERVAL_S + 1;
    }
    CHECK(pg_rxh_reason_log_ok(&r, 400, "request body of 7 bytes", &sup));
    CHECK_INT((int)sup, 2);
    pg_rxh_reasons_destroy(&r);
}

PG_TEST(test_metadata_from_pairs)
{
    static const struct pg_rxh_md_pair pairs[] = {
        {":path", "/x"},
        {"Authorization", "Bearer t"},
        {"x-tenant", "a"},
        {"x-tenant", "b"},
        {"bad-utf8", "\xff\xfe"},
    };
    struct pg_arena *a = pg_arena_create(1 << 20);
    struct pg_metadata md = {0};
    struct pg_status st;

    PG_REQUIRE(a != NULL);
    PG_REQUIRE(pg_rxh_metadata_from_pairs(a, pairs, 5, &md, &st) == PG_ERR_OK);
    CHECK_INT((int)md.n, 4);
    CHECK(pg_metadata_get(&md, "authorization", 0) != NULL &&
          strcmp(pg_metadata_get(&md, "authorization", 0), "Bearer t") == 0);
    CHECK(strcmp(md.entries[0].key, "authorization") == 0);
    CHECK_INT((int)pg_metadata_count(&md, "x-tenant"), 2);
    CHECK(strcmp(pg_metadata_get(&md, "x-tenant", 1), "b") == 0);
    CHECK(pg_metadata_get(&md, ":path", 0) == NULL);
    CHECK(strcmp(pg_metadata_get(&md, "bad-utf8", 0), "\xef\xbf\xbd\xef\xbf\xbd") == 0);
    CHECK(md.peer_addr == NULL);
    PG_REQUIRE(pg_rxh_metadata_from_pairs(a, pairs, 0, &md, &st) == PG_ERR_OK);
    CHECK_INT((int)md.n, 0);
    pg_arena_destroy(a);
}

PG_TEST_MAIN(PG_CASE(test_err_mapping), PG_CASE(test_http_to_grpc), PG_CASE(test_code_counters),
             PG_CASE(test_refusal_log), PG_CASE(test_metadata_from_pairs))
