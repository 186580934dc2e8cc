/* SPDX-License-Identifier: Apache-2.0
 * The HTTP/1.1 server's input buffer (http_server_internal.h has its
 * layout): room for a read, spares between requests, large bodies from
 * core/bufpool, socket reads into it. Offered to http_server.c and
 * httpd_read.c; loop thread only. */
#ifndef PG_HTTP_HTTPD_INPUT_H
#define PG_HTTP_HTTPD_INPUT_H

#include <stdbool.h>
#include <stddef.h>

struct evbuffer;
struct pg_httpd;
struct pg_httpd_conn;

/* At least @want bytes of room after in_len: a spare buffer, the consumed
 * bytes dropped, or a larger buffer (doubling; a body of known length gets
 * its exact size). False on OOM. */
bool httpd_in_room(struct pg_httpd_conn *c, size_t want);
/* Between requests: an empty buffer goes back (spares, pool or heap). */
void httpd_in_release(struct pg_httpd_conn *c);
/* The connection closes: its buffer goes back whatever it holds. */
void httpd_in_free(struct pg_httpd_conn *c);
/* The server goes: its spare buffers are freed. */
void httpd_in_spares_free(struct pg_httpd *s);
/* One read() of up to @max bytes (less when the buffer has some room but
 * not @max): bytes read, 0 at EOF, -1 on error (errno; EAGAIN when nothing
 * was there, ENOMEM). */
int httpd_sock_read(struct pg_httpd_conn *c, int max);
/* The read a readable socket gets: its size follows the phase (a head's,
 * what a body has been arriving at, never past its announced length, a
 * drain's). Returns as httpd_sock_read. */
int httpd_sock_read_next(struct pg_httpd_conn *c);
/* TLS: what the bufferevent decrypted (all of @from) moves into the input
 * buffer. False on OOM. */
bool httpd_in_from_evbuffer(struct pg_httpd_conn *c, struct evbuffer *from);

#endif
