/* SPDX-License-Identifier: Apache-2.0
 * OpenSSL client contexts for the OTLP exporter: CA bundle or system roots,
 * optional client certificate (mTLS), ALPN "h2", and per-connection SSL
 * objects that check the server name (DNS name or IP address). */
#ifndef PG_HTTP_TLS_CLIENT_H
#define PG_HTTP_TLS_CLIENT_H

#include <stdbool.h>

#include <openssl/ssl.h>

#include "core/err.h"

struct pg_tls_client_config {
    const char *ca_file;    /* PEM bundle; NULL = system roots */
    const char *cert_file;  /* client certificate (mTLS), with key_file */
    const char *key_file;
    bool insecure_skip_verify;
};

/* A context with ALPN h2 and TLS >= 1.2. Caller owns it (SSL_CTX_free). */
SSL_CTX *pg_tls_client_ctx_new(const struct pg_tls_client_config *cfg, struct pg_status *st);
/* A fresh SSL for one connection to @server_name (SNI unless it is an IP
 * literal; the certificate must match it unless @verify is false). */
SSL *pg_tls_client_ssl_new(SSL_CTX *ctx, const char *server_name, bool verify,
                           struct pg_status *st);
/* Appends the queued OpenSSL errors as text (for connection failure logs). */
void pg_tls_last_error(char *buf, size_t cap);

#endif
