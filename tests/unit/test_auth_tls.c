/* SPDX-License-Identifier: Apache-2.0
 * Receiver TLS: contexts from real certificates made by the openssl CLI
 * (a throw-away CA, a server and a client certificate), then in-memory
 * handshakes: plain TLS, mTLS with and without a client certificate, a
 * client certificate from another CA, and min_version enforcement. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "pg_test.h"
#include "http/tls.h"

static char dir[64];
static char path_buf[16][160];
static int path_n;
static bool have_certs;

static const char *P(const char *name)
{
    char *p = path_buf[path_n++ % 16];
    snprintf(p, 160, "%s/%s", dir, name);
    return p;
}

static bool sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd) == 0;
}

/* CA, server cert for localhost, client cert; plus a second, unrelated CA
 * with its own client cert. */
static void make_certs(void)
{
    snprintf(dir, sizeof(dir), "/tmp/pg_test_tls.XXXXXX");
    if (mkdtemp(dir) == NULL) {
        return;
    }
    have_certs =
        sh("cd %s && for ca in ca ca2; do openssl req -x509 -newkey ec -pkeyopt "
           "ec_paramgen_curve:P-256 -nodes -keyout $ca.key -out $ca.crt -days 2 -subj /CN=$ca "
           ">/dev/null 2>&1 || exit 1; done", dir) &&
        sh("cd %s && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "
           "server.key -out server.csr -subj /CN=localhost >/dev/null 2>&1 && "
           "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out "
           "server.crt -days 2 >/dev/null 2>&1", dir) &&
        sh("cd %s && for c in client:ca other:ca2; do n=${c%%%%:*}; ca=${c##*:}; "
           "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $n.key -out "
           "$n.csr -subj /CN=$n >/dev/null 2>&1 && openssl x509 -req -in $n.csr -CA $ca.crt "
           "-CAkey $ca.key -CAcreateserial -out $n.crt -days 2 >/dev/null 2>&1 || exit 1; done",
           dir);
}

/* Runs a handshake through memory BIOs; true when both sides complete. */
static bool handshake(SSL_CTX *sctx, const char *client_cert, const char *client_key, int cmax)
{
    SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
    SSL *s = SSL_new(sctx), *c;
    BIO *s_in = BIO_new(BIO_s_mem()), *s_out = BIO_new(BIO_s_mem());
    BIO *c_in = BIO_new(BIO_s_mem()), *c_out = BIO_new(BIO_s_mem());
    bool s_done = false, c_done = false, failed = false;
    char buf[16384];

    SSL_CTX_load_verify_locations(cctx, P("ca.crt"), NULL);
    SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, NULL);
    if (cmax != 0) {
        SSL_CTX_set_max_proto_version(cctx, cmax);
    }
    if (client_cert != NULL) {
        SSL_CTX_use_certificate_file(cctx, client_cert, SSL_FILETYPE_PEM);
        SSL_CTX_use_PrivateKey_file(cctx, client_key, SSL_FILETYPE_PEM);
    }
    c = SSL_new(cctx);
    SSL_set_tlsext_host_name(c, "localhost");
    SSL_set1_host(c, "localhost");
    SSL_set_bio(s, s_in, s_out);
    SSL_set_bio(c, c_in, c_out);
    SSL_set_accept_state(s);
    SSL_set_connect_state(c);
    for (int round = 0; round < 50 && !failed && !(s_done && c_done); round++) {
        int r;
        if (!c_done) {
            r = SSL_do_handshake(c);
            if (r == 1) {
                c_done = true;
            } else if (SSL_get_error(c, r) != SSL_ERROR_WANT_READ) {
                failed = true;
            }
        }
        while ((r = BIO_read(c_out, buf, sizeof(buf))) > 0) {
            BIO_write(s_in, buf, r);
        }
        if (!s_done) {
            r = SSL_do_handshake(s);
            if (r == 1) {
                s_done = true;
            } else if (SSL_get_error(s, r) != SSL_ERROR_WANT_READ) {
                failed = true;
            }
        }
        while ((r = BIO_read(s_out, buf, sizeof(buf))) > 0) {
            BIO_write(c_in, buf, r);
        }
    }
    /* TLS 1.3: the server learns a rejected client cert only after the client
     * "finished"; push one more read through so the verdict is in. */
    if (s_done && c_done) {
        int r = SSL_read(s, buf, sizeof(buf));
        if (r <= 0 && SSL_get_error(s, r) != SSL_ERROR_WANT_READ) {
            failed = true;
        }
    }
    SSL_free(s);
    SSL_free(c);
    SSL_CTX_free(cctx);
    ERR_clear_error();
    return s_done && c_done && !failed;
}

static SSL_CTX *server_ctx(const char *ca, const char *minv)
{
    struct pg_tls_server_options o = {P("server.crt"), P("server.key"), ca, minv, NULL};
    SSL_CTX *ctx = NULL;
    struct pg_status st;
    if (pg_tls_server_ctx_new(&o, &ctx, &st) != PG_ERR_OK) {
        fprintf(stderr, "  server ctx: %s\n", st.msg);
    }
    return ctx;
}

PG_TEST(test_handshakes)
{
    SSL_CTX *plain, *mtls, *only13;

    make_certs();
    if (!have_certs) {
        /* Counted as a failure: the test must not silently pass without certs. */
        fprintf(stderr, "  could not make certificates with the openssl CLI\n");
        CHECK(have_certs);
        return;
    }
    plain = server_ctx(NULL, NULL);
    mtls = server_ctx(P("ca.crt"), "1.2");
    only13 = server_ctx(NULL, "1.3");
    CHECK(plain != NULL && mtls != NULL && only13 != NULL);
    if (plain && mtls && only13) {
        CHECK(handshake(plain, NULL, NULL, 0));
        CHECK(handshake(plain, P("client.crt"), P("client.key"), 0));
        CHECK(handshake(mtls, P("client.crt"), P("client.key"), 0));
        CHECK(handshake(mtls, P("client.crt"), P("client.key"), TLS1_2_VERSION));
        CHECK(!handshake(mtls, NULL, NULL, 0));                         /* no client cert */
        CHECK(!handshake(mtls, NULL, NULL, TLS1_2_VERSION));
        CHECK(!handshake(mtls, P("other.crt"), P("other.key"), 0));     /* wrong CA */
        CHECK(handshake(only13, NULL, NULL, 0));
        CHECK(!handshake(only13, NULL, NULL, TLS1_2_VERSION));          /* below min_version */
    }
    SSL_CTX_free(plain);
    SSL_CTX_free(mtls);
    SSL_CTX_free(only13);
}

PG_TEST(test_config_errors)
{
    static const struct {
        const char *cert, *key, *ca, *minv, *maxv;
        const char *why;
    } cases[] = {
        {NULL, "server.key", NULL, NULL, NULL, "cert_file and key_file are both required"},
        {"server.crt", NULL, NULL, NULL, NULL, "cert_file and key_file are both required"},
        {"missing.crt", "server.key", NULL, NULL, NULL, "cannot load cert_file"},
        {"server.crt", "missing.key", NULL, NULL, NULL, "cannot load key_file"},
        {"server.crt", "client.key", NULL, NULL, NULL, "does not match the certificate"},
        {"server.crt", "server.key", "missing.crt", NULL, NULL, "cannot load client_ca_file"},
        {"server.crt", "server.key", NULL, "1.4", NULL, "min_version \"1.4\""},
        {"server.crt", "server.key", NULL, "TLS1.2", NULL, "min_version"},
        {"server.crt", "server.key", NULL, "1.3", "1.2", "max_version"},
    };
    if (!have_certs) {
        CHECK(have_certs);
        return;
    }
    CHECK_INT(pg_tls_parse_version("1.2"), TLS1_2_VERSION);
    CHECK_INT(pg_tls_parse_version("1.3"), TLS1_3_VERSION);
    CHECK_INT(pg_tls_parse_version("2"), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_tls_server_options o = {cases[i].cert ? P(cases[i].cert) : NULL,
                                          cases[i].key ? P(cases[i].key) : NULL,
                                          cases[i].ca ? P(cases[i].ca) : NULL, cases[i].minv,
                                          cases[i].maxv};
        SSL_CTX *ctx = NULL;
        struct pg_status st;
        st.msg[0] = '\0';
        if (pg_tls_server_ctx_new(&o, &ctx, &st) != PG_ERR_CONFIG || ctx != NULL ||
            strstr(st.msg, cases[i].why) == NULL) {
            fprintf(stderr, "  case %zu: %s\n", i, st.msg);
            CHECK(false);
        }
        SSL_CTX_free(ctx);
    }
}

PG_TEST(test_zz_cleanup)
{
    if (dir[0] != '\0') {
        CHECK(sh("rm -rf '%s'", dir));
    }
}

PG_TEST_MAIN(PG_CASE(test_handshakes), PG_CASE(test_config_errors), PG_CASE(test_zz_cleanup))
