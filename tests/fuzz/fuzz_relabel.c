/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the relabel regex compiler and template expansion:
 * the input up to the first NUL is a regex, the rest a replacement template
 * and then a subject. Compiles (RE2 subset check + PCRE2), and when it
 * compiles, matches and expands; the expansion must stay NUL-terminated in
 * its buffer. The subject also goes through the lowercase/uppercase case
 * mapping: never longer than its input, and mapping twice changes nothing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scrape/casemap.h"
#include "scrape/relabel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 3), *re, *tmpl, *subj, why[200], out[64];
    pcre2_code *code;

    if (buf == NULL) {
        return 0;
    }
    memcpy(buf, data, size);
    buf[size] = buf[size + 1] = buf[size + 2] = '\0';
    re = buf;
    tmpl = re + strlen(re) + 1;
    subj = tmpl + strlen(tmpl) + 1;
    if (subj > buf + size + 2) {
        subj = buf + size + 2;
    }
    for (int upper = 0; upper < 2; upper++) {
        char once[128], twice[128];
        size_t n1 = pg_utf8_case(once, sizeof(once), subj, upper != 0);

        if (n1 != strlen(once) || (strlen(subj) < sizeof(once) && n1 > strlen(subj)) ||
            pg_utf8_case(twice, sizeof(twice), once, upper != 0) != n1 ||
            strcmp(once, twice) != 0) {
            abort();
        }
    }
    code = pg_relabel_compile(re, why, sizeof(why));
    if (code != NULL) {
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
        pcre2_match_context *mc = pcre2_match_context_create(NULL);

        if (md != NULL && mc != NULL) {
            pcre2_set_match_limit(mc, 10000);
            if (pcre2_match(code, (PCRE2_SPTR)subj, strlen(subj), 0, 0, md, mc) >= 0) {
                pg_relabel_expand(code, md, subj, tmpl, out, sizeof(out));
                if (memchr(out, '\0', sizeof(out)) == NULL) {
                    abort();
                }
            }
        }
        pcre2_match_data_free(md);
        pcre2_match_context_free(mc);
        pcre2_code_free(code);
    } else if (why[0] == '\0') {
        abort(); /* every rejection says why */
    }
    free(buf);
    return 0;
}
