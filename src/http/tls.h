/* SPDX-License-Identifier: Apache-2.0
 * Server-side TLS for the pprof receiver (confighttp's `tls:` block):
 * an OpenSSL SSL_CTX from cert_file/key_file, optional client_ca_file for
 * mutual TLS (the client must present a certificate signed by it), and
 * min_version. pg_tls_server_bev wraps an accepted socket in a TLS
 * bufferevent for the receiver's HTTP server. */
#ifndef PG_HTTP_TLS_H
#define PG_HTTP_TLS_H

#include <openssl/ssl.h>

#include "core/config.h"
#include "core/err.h"

struct event_base;
struct bufferevent;

struct pg_tls_server_options {
    const char *cert_file;      /* PEM certificate chain; required */
    const char *key_file;       /* PEM private key; required */
    const char *client_ca_file; /* PEM CA bundle; set = mTLS required; NULL = no client certs */
    const char *min_version;    /* "1.0".."1.3"; NULL or "" = "1.2" (collector default) */
    const char *max_version;    /* NULL or "" = newest */
};

/* The confighttp `tls:` keys, binding into struct pg_tls_server_options (for
 * a receiver's field table: a PG_FT_SECTION row with sub = this). */
extern const struct pg_field pg_tls_server_fields[];

/* Builds the context; every problem (missing file, key not matching the
 * certificate, unknown version) is PG_ERR_CONFIG with the file and the
 * OpenSSL reason. The caller owns *@out: SSL_CTX_free(). */
enum pg_err pg_tls_server_ctx_new(const struct pg_tls_server_options *opt, SSL_CTX **out,
                                  struct pg_status *st);

/* Parses "1.0", "1.1", "1.2", "1.3" to a TLS1_x_VERSION; 0 when unknown. */
int pg_tls_parse_version(const char *s);

/* A server-side TLS bufferevent for the accepted socket @fd (owned by the
 * bufferevent on success; the caller closes it on NULL = OOM). @ctx is
 * borrowed and must outlive the connection. */
struct bufferevent *pg_tls_server_bev(struct event_base *base, int fd, SSL_CTX *ctx);

#endif
