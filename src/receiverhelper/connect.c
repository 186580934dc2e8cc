/* SPDX-License-Identifier: Apache-2.0
 * Connect unary error bodies: the code table and the JSON writer. */
#include "receiverhelper/connect.h"

#include <stdio.h>
#include <string.h>

const char *pg_rxh_connect_code(int http_status, int *connect_status)
{
    const char *code;
    int st;

    switch (http_status) {
    case 401: code = "unauthenticated", st = 401; break;
    case 403: code = "permission_denied", st = 403; break;
    case 404: code = "unimplemented", st = 501; break;
    case 408: code = "deadline_exceeded", st = 504; break;
    case 413: /* fall through: connect-go answers a message over its cap so */
    case 429:
    case 431: code = "resource_exhausted", st = 429; break;
    case 502:
    case 503:
    case 504: code = "unavailable", st = 503; break;
    default:
        if (http_status >= 500) {
            code = "internal", st = 500;
        } else {
            code = "invalid_argument", st = 400;
        }
    }
    if (connect_status != NULL) {
        *connect_status = st;
    }
    return code;
}

size_t pg_rxh_connect_error_json(int http_status, const char *msg, char *out, size_t cap,
                                 int *connect_status)
{
    const char *code = pg_rxh_connect_code(http_status, connect_status);
    int n = snprintf(out, cap, "{\"code\":\"%s\",\"message\":\"", code);
    size_t o = n < 0 ? 0 : (size_t)n;

    /* Room kept for the closing quote and brace. */
    for (const unsigned char *p = (const unsigned char *)(msg ? msg : ""); *p != '\0' && o + 9 < cap;
         p++) {
        if (*p == '"' || *p == '\\') {
            out[o++] = '\\';
            out[o++] = (char)*p;
        } else if (*p < 0x20) {
            o += (size_t)snprintf(out + o, cap - o, "\\u%04x", *p);
        } else {
            out[o++] = (char)*p;
        }
    }
    if (o + 3 > cap) {
        o = cap - 3;
    }
    out[o++] = '"';
    out[o++] = '}';
    out[o] = '\0';
    return o;
}
