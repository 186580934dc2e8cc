/* SPDX-License-Identifier: Apache-2.0
 * Request authentication for the pprof receiver (and the admin endpoints):
 * a bearer token read from a file (re-read when the file changes, so a
 * rotated secret takes effect without a restart) or basic auth against an
 * htpasswd-style file (`user:password` or `user:{SHA256}<hex>` per line).
 * Comparisons are constant-time over SHA-256 digests. A failure gives the
 * text of a 401 answer and the WWW-Authenticate challenge to send with it. */
#ifndef PG_HTTP_AUTH_H
#define PG_HTTP_AUTH_H

#include <stdbool.h>

#include "core/config.h"
#include "core/err.h"

struct pg_auth_options {
    const char *bearer_token_file; /* borrowed; exactly one of these two */
    const char *basic_auth_file;   /* borrowed */
    const char *realm;             /* for the challenge; NULL = "pprofgate" */
    const char *log_name;          /* log prefix; NULL = "auth" */
    long long reload_check_ns;     /* how often the file is stat'ed; 0 = 1 s */
};

struct pg_auth;

/* The receiver's `auth:` keys (bearer_token_file, basic_auth_file), binding
 * into struct pg_auth_options (a PG_FT_SECTION row with sub = this). */
extern const struct pg_field pg_auth_fields[];

/* Loads the credentials (a missing/empty/malformed file is PG_ERR_CONFIG with
 * the file and line). The caller owns *@out: pg_auth_free(). */
enum pg_err pg_auth_new(const struct pg_auth_options *opt, struct pg_auth **out,
                        struct pg_status *st);
void pg_auth_free(struct pg_auth *a);

/* Checks an Authorization header value (NULL when the header is absent).
 * True when allowed; otherwise @st says why (code MALFORMED; the receiver
 * answers 401 with pg_auth_challenge() in WWW-Authenticate). Re-reads the
 * file first when it changed (checked at most every reload_check_ns). Thread-safe. */
bool pg_auth_check(struct pg_auth *a, const char *authorization, struct pg_status *st);

/* The WWW-Authenticate value: `Bearer realm="pprofgate"` or
 * `Basic realm="pprofgate", charset="UTF-8"`. Owned by @a. */
const char *pg_auth_challenge(const struct pg_auth *a);

/* Times the credentials were (re)loaded; for tests and metrics. */
unsigned long pg_auth_reloads(const struct pg_auth *a);

#endif
