/* SPDX-License-Identifier: Apache-2.0
 * OpenSSL client setup for the exporter's gRPC connection. */
#include "http/tls_client.h"

#include <arpa/inet.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

static const unsigned char alpn_h2[] = {2, 'h', '2'};

void pg_tls_last_error(char *buf, size_t cap)
{
    unsigned long e;
    size_t off = 0;

    if (cap == 0) {
        return;
    }
    buf[0] = '\0';
    while ((e = ERR_get_error()) != 0 && off + 2 < cap) {
        if (off > 0) {
            buf[off++] = ';';
            buf[off++] = ' ';
            buf[off] = '\0';
        }
        ERR_error_string_n(e, buf + off, cap - off);
        off = strlen(buf);
    }
    if (off == 0) {
        snprintf(buf, cap, "no OpenSSL error queued");
    }
}

SSL_CTX *pg_tls_client_ctx_new(const struct pg_tls_client_config *cfg, struct pg_status *st)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    char err[256];

    if (ctx == NULL) {
        pg_status_set(st, PG_ERR_NOMEM, "tls: cannot create an OpenSSL context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (SSL_CTX_set_alpn_protos(ctx, alpn_h2, sizeof(alpn_h2)) != 0) {
        SSL_CTX_free(ctx);
        pg_status_set(st, PG_ERR_INTERNAL, "tls: cannot set ALPN h2");
        return NULL;
    }
    if (cfg->ca_file != NULL && cfg->ca_file[0] != '\0') {
        if (SSL_CTX_load_verify_locations(ctx, cfg->ca_file, NULL) != 1) {
            pg_tls_last_error(err, sizeof(err));
            SSL_CTX_free(ctx);
            pg_status_set(st, PG_ERR_CONFIG, "tls: cannot load ca_file %s: %s", cfg->ca_file, err);
            return NULL;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        pg_tls_last_error(err, sizeof(err));
        SSL_CTX_free(ctx);
        pg_status_set(st, PG_ERR_CONFIG, "tls: cannot load the system CA roots: %s", err);
        return NULL;
    }
    if ((cfg->cert_file != NULL && cfg->cert_file[0]) != (cfg->key_file != NULL && cfg->key_file[0])) {
        SSL_CTX_free(ctx);
        pg_status_set(st, PG_ERR_CONFIG, "tls: cert_file and key_file must be set together");
        return NULL;
    }
    if (cfg->cert_file != NULL && cfg->cert_file[0] != '\0') {
        if (SSL_CTX_use_certificate_chain_file(ctx, cfg->cert_file) != 1) {
            pg_tls_last_error(err, sizeof(err));
            SSL_CTX_free(ctx);
            pg_status_set(st, PG_ERR_CONFIG, "tls: cannot load cert_file %s: %s", cfg->cert_file,
                          err);
            return NULL;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, cfg->key_file, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1) {
            pg_tls_last_error(err, sizeof(err));
            SSL_CTX_free(ctx);
            pg_status_set(st, PG_ERR_CONFIG, "tls: cannot load key_file %s: %s", cfg->key_file,
                          err);
            return NULL;
        }
    }
    SSL_CTX_set_verify(ctx, cfg->insecure_skip_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    return ctx;
}

SSL *pg_tls_client_ssl_new(SSL_CTX *ctx, const char *server_name, bool verify,
                           struct pg_status *st)
{
    SSL *ssl = SSL_new(ctx);
    unsigned char addr[16];
    bool is_ip;

    if (ssl == NULL) {
        pg_status_set(st, PG_ERR_NOMEM, "tls: cannot create an SSL object");
        return NULL;
    }
    is_ip = inet_pton(AF_INET, server_name, addr) == 1 || inet_pton(AF_INET6, server_name, addr) == 1;
    if (!is_ip && SSL_set_tlsext_host_name(ssl, server_name) != 1) {
        SSL_free(ssl);
        pg_status_set(st, PG_ERR_INTERNAL, "tls: cannot set SNI %s", server_name);
        return NULL;
    }
    if (verify) {
        X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
        int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, server_name)
                       : X509_VERIFY_PARAM_set1_host(param, server_name, 0);

        if (ok != 1) {
            SSL_free(ssl);
            pg_status_set(st, PG_ERR_INTERNAL, "tls: cannot set the expected name %s", server_name);
            return NULL;
        }
    }
    return ssl;
}
