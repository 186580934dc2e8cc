/* SPDX-License-Identifier: Apache-2.0
 * The exporters' shared client settings: `tls` and `auth` field rows, the
 * TLS context, the bearer token file (client_config.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/file_read.h"
#include "core/log.h"
#include "exporter/client_config.h"
#include "http/tls_client.h"

const struct pg_field pg_exp_tls_fields[] = {
    PG_FIELD(struct pg_exp_tls_cfg, "insecure", PG_FT_BOOL, insecure, "false",
             "otlp: plaintext HTTP/2 (h2c), TLS being the default as in the collector; "
             "otlphttp: no effect, the URL scheme decides"),
    PG_FIELD(struct pg_exp_tls_cfg, "ca_file", PG_FT_STR, ca_file, NULL,
             "PEM CA bundle to verify the server (default: system roots)"),
    PG_FIELD(struct pg_exp_tls_cfg, "cert_file", PG_FT_STR, cert_file, NULL,
             "client certificate for mTLS (with key_file)"),
    PG_FIELD(struct pg_exp_tls_cfg, "key_file", PG_FT_STR, key_file, NULL, "client private key"),
    PG_FIELD(struct pg_exp_tls_cfg, "insecure_skip_verify", PG_FT_BOOL, insecure_skip_verify,
             "false", "do not verify the server certificate"),
    PG_FIELD(struct pg_exp_tls_cfg, "server_name_override", PG_FT_STR, server_name_override, NULL,
             "name for SNI and certificate verification instead of the endpoint host"),
    PG_FIELD_END,
};

const struct pg_field pg_exp_auth_fields[] = {
    PG_FIELD(struct pg_exp_auth_cfg, "bearer_token_file", PG_FT_STR, bearer_token_file, NULL,
             "file holding a token sent as `Authorization: Bearer <token>`; re-read when it "
             "changes"),
    PG_FIELD_END,
};

SSL_CTX *pg_exp_tls_ctx_new(const struct pg_exp_tls_cfg *c, struct pg_status *st)
{
    struct pg_tls_client_config tc = {c->ca_file, c->cert_file, c->key_file,
                                      c->insecure_skip_verify};

    return pg_tls_client_ctx_new(&tc, st);
}

void pg_exp_token_refresh(struct pg_exp_token *t, const char *log)
{
    struct stat sb;
    char buf[8192];
    size_t n;

    if (t->path == NULL) {
        return;
    }
    if (stat(t->path, &sb) != 0) {
        if (t->ok) {
            pg_log_warn(log, "bearer_token_file %s: %s (keeping the last token)", t->path,
                        strerror(errno));
        }
        return;
    }
    if (t->header != NULL && sb.st_mtim.tv_sec == t->mtime.tv_sec &&
        sb.st_mtim.tv_nsec == t->mtime.tv_nsec && sb.st_size == t->size) {
        return;
    }
    if (!pg_file_read_small(t->path, buf, sizeof(buf), PG_TRIM_SPACE, &n)) {
        pg_log_warn(log, "bearer_token_file %s: %s%s", t->path, strerror(errno),
                    t->ok ? " (keeping the last token)" : "");
        return;
    }
    free(t->header);
    t->header = malloc(n + 8);
    if (t->header != NULL) {
        snprintf(t->header, n + 8, "Bearer %s", buf);
    }
    t->mtime = sb.st_mtim;
    t->size = sb.st_size;
    t->ok = t->header != NULL;
    pg_log_info(log, "loaded bearer token from %s", t->path);
}

void pg_exp_token_free(struct pg_exp_token *t)
{
    free(t->header);
    t->header = NULL;
}
