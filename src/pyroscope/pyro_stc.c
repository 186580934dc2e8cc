/* SPDX-License-Identifier: Apache-2.0
 * Parses the `sample_type_config` JSON part: an object from pprof sample type to
 * {"units", "display-name", "aggregation", "cumulative", "sampled"}. Keys are matched
 * without regard to case and unknown ones ignored, as Go's encoding/json does for
 * Pyroscope's SampleTypeConfig; a wrong JSON type is refused as it refuses it. */
#include "pyroscope/pyro_stc.h"

#include <string.h>
#include <strings.h>

#include "pyroscope/pyro_json.h"

/* Copies a JSON string (or null: *@out = NULL) for entry @type's @key. */
static enum pg_err get_string(struct pg_arena *a, const char *type, const char *key,
                              struct json_object *v, const char **out, struct pg_status *st)
{
    if (v == NULL) {
        *out = NULL;
        return PG_ERR_OK;
    }
    if (!json_object_is_type(v, json_type_string)) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "sample_type_config: \"%.64s\".\"%s\" must be a string", type, key);
    }
    *out = pg_arena_strndup(a, json_object_get_string(v), (size_t)json_object_get_string_len(v));
    return *out != NULL ? PG_ERR_OK
                        : pg_status_set(st, PG_ERR_NOMEM, "sample_type_config: out of memory");
}

static enum pg_err get_bool(const char *type, const char *key, struct json_object *v, bool *out,
                            bool *has, struct pg_status *st)
{
    if (v == NULL) {
        return PG_ERR_OK; /* null: the Go field keeps its zero value, as if absent */
    }
    if (!json_object_is_type(v, json_type_boolean)) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "sample_type_config: \"%.64s\".\"%s\" must be true or false", type,
                             key);
    }
    *out = json_object_get_boolean(v) != 0;
    *has = true;
    return PG_ERR_OK;
}

static enum pg_err parse_entry(struct pg_arena *a, const char *type, struct json_object *obj,
                               struct pg_pyro_stc_entry *e, struct pg_status *st)
{
    enum pg_err err = PG_ERR_OK;

    memset(e, 0, sizeof(*e));
    e->type = pg_arena_strdup(a, type);
    if (e->type == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "sample_type_config: out of memory");
    }
    json_object_object_foreach(obj, key, v)
    {
        if (strcasecmp(key, "units") == 0) {
            err = get_string(a, type, "units", v, &e->units, st);
        } else if (strcasecmp(key, "display-name") == 0) {
            err = get_string(a, type, "display-name", v, &e->display_name, st);
        } else if (strcasecmp(key, "aggregation") == 0) {
            const char *agg = NULL;
            err = get_string(a, type, "aggregation", v, &agg, st);
            if (err == PG_ERR_OK) {
                if (agg == NULL || agg[0] == '\0') {
                    e->aggregation = PG_PYRO_AGG_UNSET;
                } else if (strcmp(agg, "sum") == 0) {
                    e->aggregation = PG_PYRO_AGG_SUM;
                } else if (strcmp(agg, "average") == 0) {
                    e->aggregation = PG_PYRO_AGG_AVERAGE;
                } else {
                    err = pg_status_set(st, PG_ERR_MALFORMED,
                                        "sample_type_config: \"%.64s\".\"aggregation\" is "
                                        "\"%.32s\", want \"sum\" or \"average\"", type, agg);
                }
            }
        } else if (strcasecmp(key, "cumulative") == 0) {
            err = get_bool(type, "cumulative", v, &e->cumulative, &e->has_cumulative, st);
        } else if (strcasecmp(key, "sampled") == 0) {
            err = get_bool(type, "sampled", v, &e->sampled, &e->has_sampled, st);
        }
        if (err != PG_ERR_OK) {
            return err;
        }
    }
    return PG_ERR_OK;
}

enum pg_err pg_pyro_stc_parse(struct pg_arena *a, const uint8_t *json, size_t len,
                              struct pg_pyro_stc_entry **out, size_t *n, struct pg_status *st)
{
    struct json_object *root;
    enum pg_err err;

    *out = NULL;
    *n = 0;
    if (len > PG_PYRO_MAX_STC_BYTES) {
        return pg_status_set(st, PG_ERR_LIMIT, "sample_type_config: %zu bytes, over the cap of %u",
                             len, PG_PYRO_MAX_STC_BYTES);
    }
    err = pg_pyro_json_parse(a, (const char *)json, len, "sample_type_config", &root, st);
    if (err != PG_ERR_OK) {
        return err;
    }
    if (!json_object_is_type(root, json_type_object)) {
        json_object_put(root);
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "sample_type_config: the document must be a JSON object");
    }
    size_t count = (size_t)json_object_object_length(root);
    if (count > PG_PYRO_MAX_STC_ENTRIES) {
        json_object_put(root);
        return pg_status_set(st, PG_ERR_MALFORMED, "sample_type_config: %zu sample types, over "
                             "the cap of %d", count, PG_PYRO_MAX_STC_ENTRIES);
    }
    struct pg_pyro_stc_entry *e = pg_arena_alloc(a, (count ? count : 1) * sizeof(*e));
    if (e == NULL) {
        json_object_put(root);
        return pg_status_set(st, PG_ERR_NOMEM, "sample_type_config: out of memory");
    }
    size_t k = 0;
    json_object_object_foreach(root, type, v)
    {
        if (v == NULL) {
            continue; /* "type": null: no config, as Go's map then holds a nil entry */
        }
        if (!json_object_is_type(v, json_type_object)) {
            err = pg_status_set(st, PG_ERR_MALFORMED,
                                "sample_type_config: \"%.64s\" must be an object", type);
            break;
        }
        if ((err = parse_entry(a, type, v, &e[k], st)) != PG_ERR_OK) {
            break;
        }
        k++;
    }
    json_object_put(root);
    if (err != PG_ERR_OK) {
        return err;
    }
    *out = e;
    *n = k;
    return PG_ERR_OK;
}
