/* SPDX-License-Identifier: Apache-2.0
 * What the otlp (gRPC) and otlphttp exporters share of the Collector's
 * client settings: the `tls` and `auth` sections (structs and field rows),
 * the OpenSSL context made from `tls`, and the bearer token read from
 * `auth.bearer_token_file` and re-read when the file changes (a rotated
 * secret takes effect without a restart). Main loop only. */
#ifndef PG_EXPORTER_CLIENT_CONFIG_H
#define PG_EXPORTER_CLIENT_CONFIG_H

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include <openssl/ssl.h>

#include "core/config.h"
#include "core/err.h"

struct pg_exp_tls_cfg {
    bool insecure;
    char *ca_file;
    char *cert_file;
    char *key_file;
    bool insecure_skip_verify;
    char *server_name_override;
};
extern const struct pg_field pg_exp_tls_fields[];

struct pg_exp_auth_cfg {
    char *bearer_token_file;
};
extern const struct pg_field pg_exp_auth_fields[];

/* A client context for @c (CA bundle or system roots, mTLS, ALPN h2); the
 * caller owns it. NULL with the reason in @st. */
SSL_CTX *pg_exp_tls_ctx_new(const struct pg_exp_tls_cfg *c, struct pg_status *st);

struct pg_exp_token {
    const char *path;   /* borrowed (config); NULL = no token */
    char *header;       /* "Bearer <token>" (malloc), NULL until read */
    struct timespec mtime;
    off_t size;
    bool ok;
};

/* Reads the file again when its mtime or size changed; on failure keeps the
 * last token and logs under @log. */
void pg_exp_token_refresh(struct pg_exp_token *t, const char *log);
void pg_exp_token_free(struct pg_exp_token *t);

#endif
