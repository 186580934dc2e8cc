/* SPDX-License-Identifier: Apache-2.0
 * One HTTP/1.1 request in (see httpd_read.c), offered to http_server.c:
 * each call works on what the input buffer holds and tells the caller what
 * comes next, so the reader never calls back up into the connection.
 * Loop thread only. */
#ifndef PG_HTTP_HTTPD_READ_H
#define PG_HTTP_HTTPD_READ_H

#include <stdbool.h>

struct pg_httpd_conn;

enum httpd_step {
    HTTPD_STEP_WAIT = 0, /* wait for bytes (or an answer was given: the state moved on) */
    HTTPD_STEP_NEXT,     /* the head was accepted: its body is read next (state BODY) */
    HTTPD_STEP_REQUEST,  /* the request is whole (state CALL, r->body set): to the handler */
    HTTPD_STEP_CLOSE,    /* out of memory: close the connection */
};

/* HEAD: skips blank lines, starts the header deadline at the first byte,
 * parses a complete head (431/4xx refusals here), asks the handler
 * (on_head) and sets up the body. */
enum httpd_step httpd_read_head(struct pg_httpd_conn *c);
/* BODY: takes Content-Length or chunked body bytes (413 past the cap, 400
 * on bad framing), tells the handler (on_body), moves the body deadline. */
enum httpd_step httpd_read_body(struct pg_httpd_conn *c);
/* LINGER: drops what arrived, within the drain budget siblings share;
 * false when the connection is to close (its share or budget spent). */
bool httpd_linger_read(struct pg_httpd_conn *c);
/* The request is over (answer written or connection lost): on_done, and
 * its head buffer trimmed back to what a connection keeps. */
void httpd_req_end(struct pg_httpd_conn *c);

#endif
