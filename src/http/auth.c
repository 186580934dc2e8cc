/* SPDX-License-Identifier: Apache-2.0
 * Bearer-token and basic authentication (see auth.h). Secrets are kept only
 * as SHA-256 digests; a presented credential is hashed and compared with
 * CRYPTO_memcmp, so neither its length nor its content leaks through timing.
 * A file that changes is re-read; if the new content is unusable the old
 * credentials stay in force and the problem is logged. */
#include "core/base64.h"
#include "core/clock.h"
#include "core/file_read.h"
#include "core/hex.h"
#include "core/vec.h"
#include "http/auth.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "core/log.h"

#define DIGEST_LEN 32
#define MAX_FILE_BYTES (1024 * 1024)
#define MAX_HEADER_BYTES 8192

struct cred {
    char *user;                 /* owned; NULL for the bearer token */
    unsigned char digest[DIGEST_LEN];
};

struct creds {
    struct cred *v;             /* owned */
    size_t n;
};

struct pg_auth {
    pthread_mutex_t mu;
    bool basic;
    char *path;                 /* owned */
    char *log_name;             /* owned */
    char *challenge;            /* owned */
    long long check_ns;
    int64_t last_check_ns;
    struct stat seen;           /* the file as last loaded */
    struct creds creds;
    unsigned long reloads;
    unsigned char dummy[DIGEST_LEN]; /* compared against for unknown users */
};

const struct pg_field pg_auth_fields[] = {
    PG_FIELD(struct pg_auth_options, "bearer_token_file", PG_FT_STR, bearer_token_file, NULL,
             "file holding the token clients send as Authorization: Bearer <token>"),
    PG_FIELD(struct pg_auth_options, "basic_auth_file", PG_FT_STR, basic_auth_file, NULL,
             "user:password or user:{SHA256}<hex> lines (re-read when changed)"),
    PG_FIELD(struct pg_auth_options, "realm", PG_FT_STR, realm, "pprofgate",
             "realm in WWW-Authenticate"),
    PG_FIELD_END,
};

static void sha256(const void *p, size_t n, unsigned char out[DIGEST_LEN])
{
    unsigned int len = DIGEST_LEN;
    if (EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) != 1) {
        memset(out, 0, DIGEST_LEN); /* never matches a real digest by chance */
        out[0] = 1;
    }
}

static void creds_free(struct creds *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].user);
        OPENSSL_cleanse(c->v[i].digest, DIGEST_LEN);
    }
    free(c->v);
    c->v = NULL;
    c->n = 0;
}

static char *read_file(const char *path, size_t *len, struct stat *sb, struct pg_status *st)
{
    char *buf = pg_file_read_all(path, MAX_FILE_BYTES, len, sb);

    if (buf == NULL) {
        if (errno == EFBIG) {
            pg_status_set(st, PG_ERR_CONFIG, "%s: larger than %d bytes", path, MAX_FILE_BYTES);
        } else if (errno == ENOMEM) {
            pg_status_set(st, PG_ERR_NOMEM, "out of memory reading %s", path);
        } else {
            pg_status_set(st, PG_ERR_CONFIG, "cannot open %s: %s", path, strerror(errno));
        }
    }
    return buf;
}

static bool load_bearer(const char *path, struct creds *out, struct stat *sb, struct pg_status *st)
{
    size_t len;
    char *buf = read_file(path, &len, sb, st);
    char *b, *e;

    if (buf == NULL) {
        return false;
    }
    /* The token is the file's content without surrounding whitespace (a
     * trailing newline from `echo` must not become part of it). */
    b = buf;
    e = buf + len;
    while (b < e && isspace((unsigned char)*b)) {
        b++;
    }
    while (e > b && isspace((unsigned char)e[-1])) {
        e--;
    }
    if (b == e) {
        OPENSSL_cleanse(buf, len);
        free(buf);
        pg_status_set(st, PG_ERR_CONFIG, "bearer token file %s is empty", path);
        return false;
    }
    out->v = calloc(1, sizeof(*out->v));
    if (out->v == NULL) {
        OPENSSL_cleanse(buf, len);
        free(buf);
        pg_status_set(st, PG_ERR_NOMEM, "out of memory");
        return false;
    }
    out->n = 1;
    sha256(b, (size_t)(e - b), out->v[0].digest);
    OPENSSL_cleanse(buf, len);
    free(buf);
    return true;
}

static bool load_basic(const char *path, struct creds *out, struct stat *sb, struct pg_status *st)
{
    size_t len;
    char *buf = read_file(path, &len, sb, st);
    char *line, *save = NULL;
    int lineno = 0;
    size_t cap = 0;
    bool ok = true;

    if (buf == NULL) {
        return false;
    }
    for (line = strtok_r(buf, "\n", &save); line != NULL && ok; line = strtok_r(NULL, "\n", &save)) {
        char *colon, *pw;
        size_t ll = strlen(line);
        struct cred c = {0};

        lineno++;
        if (ll > 0 && line[ll - 1] == '\r') {
            line[--ll] = '\0';
        }
        if (ll == 0 || line[0] == '#') {
            continue;
        }
        colon = strchr(line, ':');
        if (colon == NULL || colon == line) {
            pg_status_set(st, PG_ERR_CONFIG, "%s:%d: expected user:password", path, lineno);
            ok = false;
            break;
        }
        *colon = '\0';
        pw = colon + 1;
        if (strncmp(pw, "{SHA256}", 8) == 0) {
            const char *hex = pw + 8;
            if (strlen(hex) != 2 * DIGEST_LEN) {
                pg_status_set(st, PG_ERR_CONFIG, "%s:%d: {SHA256} needs 64 hex digits", path,
                              lineno);
                ok = false;
                break;
            }
            for (int i = 0; i < DIGEST_LEN; i++) {
                int hi = pg_hex_digit((unsigned char)hex[2 * i]);
                int lo = pg_hex_digit((unsigned char)hex[2 * i + 1]);
                if (hi < 0 || lo < 0) {
                    pg_status_set(st, PG_ERR_CONFIG, "%s:%d: {SHA256} value is not hex", path,
                                  lineno);
                    ok = false;
                    break;
                }
                c.digest[i] = (unsigned char)(hi << 4 | lo);
            }
            if (!ok) {
                break;
            }
        } else if (pw[0] == '{' || pw[0] == '$') {
            /* bcrypt ($2y$), {SHA} (SHA-1) and crypt formats are not supported:
             * say so instead of comparing against the literal hash text. */
            pg_status_set(st, PG_ERR_CONFIG,
                          "%s:%d: unsupported password hash; use a plain password or "
                          "{SHA256}<hex of sha256(password)>", path, lineno);
            ok = false;
            break;
        } else if (*pw == '\0') {
            pg_status_set(st, PG_ERR_CONFIG, "%s:%d: empty password", path, lineno);
            ok = false;
            break;
        } else {
            sha256(pw, strlen(pw), c.digest);
        }
        c.user = strdup(line);
        if (c.user == NULL) {
            pg_status_set(st, PG_ERR_NOMEM, "out of memory");
            ok = false;
            break;
        }
        if (!PG_VEC_GROW(NULL, out->v, cap, out->n, 8, 0)) {
            free(c.user);
            pg_status_set(st, PG_ERR_NOMEM, "out of memory");
            ok = false;
            break;
        }
        out->v[out->n++] = c;
    }
    if (ok && out->n == 0) {
        pg_status_set(st, PG_ERR_CONFIG, "basic auth file %s has no user:password lines", path);
        ok = false;
    }
    OPENSSL_cleanse(buf, len);
    free(buf);
    if (!ok) {
        creds_free(out);
    }
    return ok;
}

static bool load(struct pg_auth *a, struct creds *out, struct stat *sb, struct pg_status *st)
{
    memset(out, 0, sizeof(*out));
    return a->basic ? load_basic(a->path, out, sb, st) : load_bearer(a->path, out, sb, st);
}

enum pg_err pg_auth_new(const struct pg_auth_options *opt, struct pg_auth **out,
                        struct pg_status *st)
{
    struct pg_auth *a;
    const char *realm = opt->realm != NULL ? opt->realm : "pprofgate";
    char ch[256];

    *out = NULL;
    if ((opt->bearer_token_file == NULL) == (opt->basic_auth_file == NULL)) {
        return pg_status_set(st, PG_ERR_CONFIG,
                             "auth: set exactly one of bearer_token_file and basic_auth_file");
    }
    a = calloc(1, sizeof(*a));
    if (a == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&a->mu, NULL);
    a->basic = opt->basic_auth_file != NULL;
    a->path = strdup(a->basic ? opt->basic_auth_file : opt->bearer_token_file);
    a->log_name = strdup(opt->log_name != NULL ? opt->log_name : "auth");
    if (a->basic) {
        snprintf(ch, sizeof(ch), "Basic realm=\"%s\", charset=\"UTF-8\"", realm);
    } else {
        snprintf(ch, sizeof(ch), "Bearer realm=\"%s\"", realm);
    }
    a->challenge = strdup(ch);
    a->check_ns = opt->reload_check_ns > 0 ? opt->reload_check_ns : 1000000000ll;
    sha256("pprofgate-no-such-user", 22, a->dummy);
    if (a->path == NULL || a->log_name == NULL || a->challenge == NULL) {
        pg_auth_free(a);
        return pg_status_set(st, PG_ERR_NOMEM, "out of memory");
    }
    if (!load(a, &a->creds, &a->seen, st)) {
        pg_auth_free(a);
        return st != NULL ? st->code : PG_ERR_CONFIG;
    }
    a->reloads = 1;
    a->last_check_ns = pg_mono_ns();
    *out = a;
    return PG_ERR_OK;
}

void pg_auth_free(struct pg_auth *a)
{
    if (a == NULL) {
        return;
    }
    creds_free(&a->creds);
    pthread_mutex_destroy(&a->mu);
    free(a->path);
    free(a->log_name);
    free(a->challenge);
    free(a);
}

const char *pg_auth_challenge(const struct pg_auth *a)
{
    return a->challenge;
}

unsigned long pg_auth_reloads(const struct pg_auth *a)
{
    return a->reloads;
}

/* Called with a->mu held. */
static void maybe_reload(struct pg_auth *a)
{
    int64_t now = pg_mono_ns();
    struct stat sb;
    struct creds fresh;
    struct pg_status st;

    if (now - a->last_check_ns < a->check_ns) {
        return;
    }
    a->last_check_ns = now;
    if (stat(a->path, &sb) != 0) {
        pg_log_warn(a->log_name, "cannot stat %s (%s); keeping the credentials loaded before",
                    a->path, strerror(errno));
        return;
    }
    if (sb.st_ino == a->seen.st_ino && sb.st_size == a->seen.st_size &&
        sb.st_mtim.tv_sec == a->seen.st_mtim.tv_sec &&
        sb.st_mtim.tv_nsec == a->seen.st_mtim.tv_nsec) {
        return;
    }
    if (!load(a, &fresh, &sb, &st)) {
        pg_log_warn(a->log_name, "%s changed but cannot be used (%s); keeping the credentials "
                                 "loaded before", a->path, st.msg);
        a->seen = sb; /* do not re-log every second for the same bad content */
        return;
    }
    creds_free(&a->creds);
    a->creds = fresh;
    a->seen = sb;
    a->reloads++;
    pg_log_info(a->log_name, "reloaded credentials from %s", a->path);
}

/* "<scheme> <rest>": true when @h starts with @scheme (any case) and blanks. */
static const char *after_scheme(const char *h, const char *scheme)
{
    size_t n = strlen(scheme);
    if (strncasecmp(h, scheme, n) != 0 || (h[n] != ' ' && h[n] != '\t')) {
        return NULL;
    }
    h += n;
    while (*h == ' ' || *h == '\t') {
        h++;
    }
    return h;
}

static bool check_bearer(struct pg_auth *a, const char *h, struct pg_status *st)
{
    const char *tok = after_scheme(h, "Bearer");
    size_t n;
    unsigned char d[DIGEST_LEN];

    if (tok == NULL) {
        pg_status_set(st, PG_ERR_MALFORMED, "unauthorized: expected an Authorization: Bearer "
                                            "<token> header");
        return false;
    }
    n = strlen(tok);
    while (n > 0 && (tok[n - 1] == ' ' || tok[n - 1] == '\t')) {
        n--;
    }
    sha256(tok, n, d);
    if (n == 0 || CRYPTO_memcmp(d, a->creds.v[0].digest, DIGEST_LEN) != 0) {
        pg_status_set(st, PG_ERR_MALFORMED, "unauthorized: invalid bearer token");
        return false;
    }
    return true;
}

static bool check_basic(struct pg_auth *a, const char *h, struct pg_status *st)
{
    const char *enc = after_scheme(h, "Basic");
    unsigned char dec[MAX_HEADER_BYTES];
    unsigned char d[DIGEST_LEN];
    const unsigned char *want = a->dummy;
    long n;
    char *colon;
    bool user_ok = false;
    size_t elen;

    if (enc == NULL) {
        pg_status_set(st, PG_ERR_MALFORMED,
                      "unauthorized: expected an Authorization: Basic <credentials> header");
        return false;
    }
    elen = strlen(enc);
    while (elen > 0 && (enc[elen - 1] == ' ' || enc[elen - 1] == '\t')) {
        elen--;
    }
    n = pg_base64_decode(enc, elen, PG_BASE64_STRICT, dec, sizeof(dec) - 1);
    if (n < 0) {
        pg_status_set(st, PG_ERR_MALFORMED, "unauthorized: malformed Basic credentials "
                                            "(not base64)");
        return false;
    }
    dec[n] = '\0';
    colon = memchr(dec, ':', (size_t)n);
    if (colon == NULL || memchr(dec, '\0', (size_t)n) != NULL) {
        pg_status_set(st, PG_ERR_MALFORMED,
                      "unauthorized: malformed Basic credentials (expected user:password)");
        OPENSSL_cleanse(dec, sizeof(dec));
        return false;
    }
    *colon = '\0';
    for (size_t i = 0; i < a->creds.n; i++) {
        if (strcmp(a->creds.v[i].user, (const char *)dec) == 0) {
            want = a->creds.v[i].digest;
            user_ok = true;
            break;
        }
    }
    /* Hash and compare even for an unknown user, so timing does not tell
     * which user names exist. */
    sha256(colon + 1, (size_t)(n - (long)(colon + 1 - (char *)dec)), d);
    OPENSSL_cleanse(dec, sizeof(dec));
    if (CRYPTO_memcmp(d, want, DIGEST_LEN) != 0 || !user_ok) {
        pg_status_set(st, PG_ERR_MALFORMED, "unauthorized: invalid user name or password");
        return false;
    }
    return true;
}

bool pg_auth_check(struct pg_auth *a, const char *authorization, struct pg_status *st)
{
    bool ok;

    if (authorization == NULL || authorization[0] == '\0') {
        pg_status_set(st, PG_ERR_MALFORMED, "unauthorized: missing Authorization header");
        return false;
    }
    if (strlen(authorization) >= MAX_HEADER_BYTES) {
        pg_status_set(st, PG_ERR_MALFORMED, "unauthorized: Authorization header too long");
        return false;
    }
    pthread_mutex_lock(&a->mu);
    maybe_reload(a);
    ok = a->basic ? check_basic(a, authorization, st) : check_bearer(a, authorization, st);
    pthread_mutex_unlock(&a->mu);
    return ok;
}
