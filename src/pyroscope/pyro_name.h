/* SPDX-License-Identifier: Apache-2.0
 * The Pyroscope `name` query value, "app.name{k=v,k2=v2}" (already URL-decoded): the
 * application name with its profile-type suffix split off, and the labels. Part of the
 * pyroscope room, a lower room of pure parsers (core/ only; no receiver/, pipeline/ or
 * http/ in reach): no I/O, no globals, every size capped, everything in the caller's arena,
 * every failure a pg_status naming what and where, MALFORMED (400) or LIMIT (413). */
#ifndef PG_PYROSCOPE_PYRO_NAME_H
#define PG_PYROSCOPE_PYRO_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"

#define PG_PYRO_MAX_LABELS 128      /* labels in one name or one Push series */
#define PG_PYRO_MAX_NAME_LEN 65536u /* bytes of one `name` value */

struct pg_pyro_label {
    const char *name, *value; /* NUL-terminated, in the arena */
};

struct pg_pyro_name {
    const char *app;         /* application name, profile-type suffix removed ("" never: MALFORMED) */
    const char *type_suffix; /* "cpu", "alloc_objects", ... as Pyroscope recognises them
                              * (pyroscope/pyro_type.h), or NULL when the name had none */
    struct pg_pyro_label *labels; /* in the order given; a repeated key: the last one wins, once */
    size_t n_labels;
};

/* Pyroscope's rules (its labelset parser): the app and each key and value are trimmed of
 * white space; the app is [A-Za-z0-9_./-]+; a key is [A-Za-z0-9_.]+ (a leading digit is
 * fine); a value is anything but ',', '{', '}' (may be empty, '=' allowed); "{}" and a
 * trailing comma are fine; the suffix is the part after the app's last '.' when
 * pg_pyro_type_lookup knows it. A `__name__` key stays an ordinary label here (Pyroscope
 * lets it replace the app name: the caller decides).
 * Errors (stricter than Pyroscope, which drops what it cannot read): unbalanced or nested
 * braces, text after '}', an item without '=', an empty key, a key or app with another
 * character, invalid UTF-8 or NUL, more than PG_PYRO_MAX_LABELS distinct keys (LIMIT), len
 * over 64 KiB (LIMIT). */
enum pg_err pg_pyro_name_parse(struct pg_arena *a, const char *s, size_t len,
                               struct pg_pyro_name *out, struct pg_status *st);
/* The same without the copy: @s (NUL at @s[len], outliving @out) is cut in place, so @out's
 * strings point into it (the receiver's query copy: one copy less per push). */
enum pg_err pg_pyro_name_parse_in(struct pg_arena *a, char *s, size_t len,
                                  struct pg_pyro_name *out, struct pg_status *st);

/* True when @suffix (NUL-terminated) is a profile-type suffix Pyroscope recognises after the
 * last '.' of an application name. */
bool pg_pyro_name_is_type_suffix(const char *suffix);

/* True when @s[0..n) is a valid label name: [a-zA-Z_.][a-zA-Z0-9_.]* (Pyroscope's rule: the
 * Prometheus one plus '.'). */
bool pg_pyro_label_name_valid(const char *s, size_t n);

#endif
