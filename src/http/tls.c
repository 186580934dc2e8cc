/* SPDX-License-Identifier: Apache-2.0
 * Server-side TLS context for the receiver (see tls.h). Only modern
 * defaults: no compression, no renegotiation, server cipher preference, and
 * TLS 1.2 as the floor unless the operator lowers it on purpose. */
#include "http/tls.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>

const struct pg_field pg_tls_server_fields[] = {
    PG_FIELD(struct pg_tls_server_options, "cert_file", PG_FT_STR, cert_file, NULL,
             "PEM certificate chain"),
    PG_FIELD(struct pg_tls_server_options, "key_file", PG_FT_STR, key_file, NULL,
             "PEM private key"),
    PG_FIELD(struct pg_tls_server_options, "client_ca_file", PG_FT_STR, client_ca_file, NULL,
             "CA bundle; when set, clients must present a certificate it signed (mTLS)"),
    PG_FIELD(struct pg_tls_server_options, "min_version", PG_FT_STR, min_version, "1.2",
             "1.0, 1.1, 1.2 or 1.3"),
    PG_FIELD(struct pg_tls_server_options, "max_version", PG_FT_STR, max_version, NULL,
             "newest allowed; empty = newest supported"),
    PG_FIELD_END,
};

/* The newest OpenSSL error as text ("no such file", "key values mismatch"). */
static const char *ssl_reason(void)
{
    static _Thread_local char buf[200];
    unsigned long e = ERR_peek_last_error();

    if (e == 0) {
        return "unknown error";
    }
    ERR_error_string_n(e, buf, sizeof(buf));
    ERR_clear_error();
    return buf;
}

int pg_tls_parse_version(const char *s)
{
    static const struct {
        const char *name;
        int v;
    } tbl[] = {{"1.0", TLS1_VERSION}, {"1.1", TLS1_1_VERSION}, {"1.2", TLS1_2_VERSION},
               {"1.3", TLS1_3_VERSION}};
    for (size_t i = 0; i < sizeof(tbl) / sizeof(tbl[0]); i++) {
        if (strcmp(s, tbl[i].name) == 0) {
            return tbl[i].v;
        }
    }
    return 0;
}

enum pg_err pg_tls_server_ctx_new(const struct pg_tls_server_options *opt, SSL_CTX **out,
                                  struct pg_status *st)
{
    SSL_CTX *ctx;
    const char *minv = opt->min_version && opt->min_version[0] ? opt->min_version : "1.2";
    int vmin = pg_tls_parse_version(minv), vmax = 0;
    enum pg_err err;

    *out = NULL;
    if (opt->cert_file == NULL || opt->key_file == NULL || !opt->cert_file[0] ||
        !opt->key_file[0]) {
        return pg_status_set(st, PG_ERR_CONFIG, "tls: cert_file and key_file are both required");
    }
    if (vmin == 0) {
        return pg_status_set(st, PG_ERR_CONFIG,
                             "tls: min_version \"%s\" is not one of 1.0, 1.1, 1.2, 1.3", minv);
    }
    if (opt->max_version && opt->max_version[0]) {
        vmax = pg_tls_parse_version(opt->max_version);
        if (vmax == 0 || vmax < vmin) {
            return pg_status_set(st, PG_ERR_CONFIG,
                                 "tls: max_version \"%s\" is not one of 1.0..1.3 at or above "
                                 "min_version %s", opt->max_version, minv);
        }
    }
    ERR_clear_error();
    ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "tls: cannot create a context: %s", ssl_reason());
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_set_min_proto_version(ctx, vmin) != 1 ||
        (vmax != 0 && SSL_CTX_set_max_proto_version(ctx, vmax) != 1)) {
        err = pg_status_set(st, PG_ERR_CONFIG, "tls: cannot set protocol versions: %s",
                            ssl_reason());
        goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, opt->cert_file) != 1) {
        err = pg_status_set(st, PG_ERR_CONFIG, "tls: cannot load cert_file %s: %s",
                            opt->cert_file, ssl_reason());
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, opt->key_file, SSL_FILETYPE_PEM) != 1) {
        if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
            err = pg_status_set(st, PG_ERR_CONFIG,
                                "tls: key_file %s does not match the certificate in %s",
                                opt->key_file, opt->cert_file);
            ERR_clear_error();
        } else {
            err = pg_status_set(st, PG_ERR_CONFIG, "tls: cannot load key_file %s: %s",
                                opt->key_file, ssl_reason());
        }
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        err = pg_status_set(st, PG_ERR_CONFIG,
                            "tls: key_file %s does not match the certificate in %s: %s",
                            opt->key_file, opt->cert_file, ssl_reason());
        goto fail;
    }
    if (opt->client_ca_file && opt->client_ca_file[0]) {
        STACK_OF(X509_NAME) *names;
        if (SSL_CTX_load_verify_locations(ctx, opt->client_ca_file, NULL) != 1) {
            err = pg_status_set(st, PG_ERR_CONFIG, "tls: cannot load client_ca_file %s: %s",
                                opt->client_ca_file, ssl_reason());
            goto fail;
        }
        /* Tell clients which CAs we accept, so they pick the right cert. */
        names = SSL_load_client_CA_file(opt->client_ca_file);
        if (names != NULL) {
            SSL_CTX_set_client_CA_list(ctx, names);
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    *out = ctx;
    return PG_ERR_OK;
fail:
    SSL_CTX_free(ctx);
    return err;
}

struct bufferevent *pg_tls_server_bev(struct event_base *base, int fd, SSL_CTX *ctx)
{
    SSL *ssl = SSL_new(ctx);
    struct bufferevent *bev;

    if (ssl == NULL) {
        return NULL;
    }
    /* The bufferevent owns the SSL and the fd from here (BEV_OPT_CLOSE_ON_FREE). */
    bev = bufferevent_openssl_socket_new(base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                         BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        SSL_free(ssl);
        return NULL;
    }
    /* Many HTTP clients close without close_notify; that is not an error. */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}
