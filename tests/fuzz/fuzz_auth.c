/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the Authorization header check (http/auth.c)
 * against two fixed credential sets, with an independent oracle:
 * byte 0 picks the mode, the rest is the input.
 *   0: the input is the header, checked by a bearer instance; allowed exactly
 *      when it is "Bearer" (any case), blanks, the token, optional blanks.
 *   1: the input is the header, checked by a basic instance; when allowed,
 *      OpenSSL's base64 decoder must give a listed user:password.
 *   2: the input is "user:password", sent as "Basic <base64>" (scheme case
 *      and blanks varied by byte 0 / 3); allowed exactly when it is listed.
 * Every refusal is MALFORMED with an "unauthorized:" message. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "http/auth.h"

#define TOKEN "s3cret-T0ken/with+base64=chars"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const k_creds[] = {"ops:pw1", "alice:wonder:land", "b:x y"};

static struct pg_auth *g_bearer, *g_basic;

static void check(int cond)
{
    if (!cond) {
        abort();
    }
}

static struct pg_auth *make(const char *dir, const char *name, const char *content, bool basic)
{
    char path[512];
    struct pg_auth_options o = {0};
    struct pg_status st;
    struct pg_auth *a = NULL;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    check(f != NULL && fputs(content, f) >= 0 && fclose(f) == 0);
    if (basic) {
        o.basic_auth_file = path;
    } else {
        o.bearer_token_file = path;
    }
    o.reload_check_ns = 1000000000000ll; /* never re-read during the run */
    check(pg_auth_new(&o, &a, &st) == PG_ERR_OK && a != NULL);
    return a;
}

static void init(void)
{
    char dir[] = "/tmp/pg-fuzz-auth-XXXXXX";
    char cmd[64];

    check(mkdtemp(dir) != NULL);
    g_bearer = make(dir, "token", TOKEN "\n", false);
    /* "alice" is stored hashed, the others in clear: both forms are compared. */
    g_basic = make(dir, "htpasswd",
                   "ops:pw1\n"
                   "alice:{SHA256}"
                   "99dafe115ed8d4bdef67bb4ac88f16acdf9d5872cf701bd070d427d5bc1f1fea\n"
                   "b:x y\n",
                   true);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    check(system(cmd) == 0);
}

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool bearer_oracle(const char *h)
{
    size_t n = strlen(h), i = 6, end = n;

    if (n < 7 || strncasecmp(h, "bearer", 6) != 0 || !blank(h[6])) {
        return false;
    }
    while (blank(h[i])) {
        i++;
    }
    while (end > i && blank(h[end - 1])) {
        end--;
    }
    return end - i == strlen(TOKEN) && memcmp(h + i, TOKEN, end - i) == 0;
}

static bool listed(const char *cred, size_t n)
{
    for (size_t i = 0; i < sizeof(k_creds) / sizeof(k_creds[0]); i++) {
        if (strlen(k_creds[i]) == n && memcmp(k_creds[i], cred, n) == 0) {
            return true;
        }
    }
    return false;
}

/* Allowed Basic header: the trimmed base64 after the scheme must decode
 * (by OpenSSL, not by auth.c) to a listed credential. */
static bool basic_allowed_is_listed(const char *h)
{
    const char *p = h + 5;
    size_t n;
    unsigned char out[8192];
    int dec;

    if (strncasecmp(h, "basic", 5) != 0 || !blank(*p)) {
        return false;
    }
    while (blank(*p)) {
        p++;
    }
    n = strlen(p);
    while (n > 0 && blank(p[n - 1])) {
        n--;
    }
    if (n == 0 || n % 4 != 0 || n / 4 * 3 > sizeof(out)) {
        return false;
    }
    dec = EVP_DecodeBlock(out, (const unsigned char *)p, (int)n);
    if (dec < 0) {
        return false;
    }
    dec -= (p[n - 1] == '=') + (p[n - 2] == '=');
    return listed((const char *)out, (size_t)dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pg_status st;
    char *h;
    bool ok, want;

    if (g_bearer == NULL) {
        init();
    }
    if (size < 1 || size > 4096) {
        return 0;
    }
    switch (data[0] % 3) {
    case 0:
    case 1:
        h = strndup((const char *)data + 1, size - 1); /* a header stops at NUL */
        check(h != NULL);
        if (data[0] % 3 == 0) {
            ok = pg_auth_check(g_bearer, h, &st);
            check(ok == bearer_oracle(h));
        } else {
            ok = pg_auth_check(g_basic, h, &st);
            check(!ok || basic_allowed_is_listed(h));
        }
        break;
    default: {
        static const char *const schemes[] = {"Basic", "basic", "BASIC", "bAsIc"};
        size_t cred_len = size - 1, enc_cap = (cred_len + 2) / 3 * 4 + 1;
        unsigned sel = data[0] / 3u;
        char *enc = malloc(enc_cap);

        h = malloc(enc_cap + 16);
        check(enc != NULL && h != NULL);
        EVP_EncodeBlock((unsigned char *)enc, data + 1, (int)cred_len);
        snprintf(h, enc_cap + 16, "%s%s%s%s", schemes[sel & 3], (sel & 4) ? "\t " : " ", enc,
                 (sel & 8) ? " \t" : "");
        free(enc);
        ok = pg_auth_check(g_basic, h, &st);
        want = cred_len > 0 && memchr(data + 1, '\0', cred_len) == NULL &&
               listed((const char *)data + 1, cred_len);
        check(ok == want);
        break;
    }
    }
    if (!ok) {
        check(st.code == PG_ERR_MALFORMED && strncmp(st.msg, "unauthorized:", 13) == 0);
    }
    free(h);
    return 0;
}
