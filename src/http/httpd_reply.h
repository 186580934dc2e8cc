/* SPDX-License-Identifier: Apache-2.0
 * The HTTP/1.1 server's answers, beyond the public pg_httpd_reply*: the
 * server's own last words on a closing socket, and the held answers a loop
 * pass sends together. Offered to http_server.c and httpd_read.c; loop
 * thread only. */
#ifndef PG_HTTP_HTTPD_REPLY_H
#define PG_HTTP_HTTPD_REPLY_H

#include <stdbool.h>

struct pg_httpd;
struct pg_httpd_conn;

/* Plain TCP only (a TLS server says nothing): a short text/plain @code
 * answer (408 or 503) written straight to @fd before it closes; nothing
 * waits for it to drain. */
void httpd_raw_answer(const struct pg_httpd *s, int fd, int code, const char *reason);
/* The oldest connection whose answer is held, taken off the list (NULL:
 * none). The list may change between two calls (closes, new answers). */
struct pg_httpd_conn *httpd_flush_next(struct pg_httpd *s);
/* Sends @c's held answer: true when the socket took it whole (the caller
 * then finishes the request), else its rest waits in the output buffer and
 * the bufferevent writes it within write_timeout. */
bool httpd_flush_send(struct pg_httpd_conn *c);
/* A closing connection leaves the held list. */
void httpd_flush_unlink(struct pg_httpd_conn *c);
/* The server goes: held answers are sent as far as the sockets take them
 * now, and nothing runs after them. */
void httpd_flush_abandon(struct pg_httpd *s);

#endif
