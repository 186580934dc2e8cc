/* SPDX-License-Identifier: Apache-2.0
 * Connect protocol unary answers over HTTP/1.1 (connectrpc.com protocol
 * spec): an error is a JSON object {"code": "<connect code>", "message":
 * "..."} with the HTTP status that code maps to. Used by the Pyroscope Push
 * API route; protocol-neutral otherwise (no I/O). */
#ifndef PG_RECEIVERHELPER_CONNECT_H
#define PG_RECEIVERHELPER_CONNECT_H

#include <stddef.h>

/* The Connect code name for a receiver's HTTP error status (400
 * invalid_argument, 401 unauthenticated, 403 permission_denied, 404
 * unimplemented, 408 deadline_exceeded, 413/429/431 resource_exhausted, 503
 * unavailable, other 5xx internal, other 4xx invalid_argument), and in
 * *@connect_status the HTTP status the spec pairs with that code. */
const char *pg_rxh_connect_code(int http_status, int *connect_status);

/* Writes the error body for @http_status and @msg into @out (@cap bytes,
 * NUL-terminated, the message cut to fit); returns its length. The HTTP
 * status to send is in *@connect_status. */
size_t pg_rxh_connect_error_json(int http_status, const char *msg, char *out, size_t cap,
                                 int *connect_status);

#endif
