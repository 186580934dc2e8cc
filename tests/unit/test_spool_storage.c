/* SPDX-License-Identifier: Apache-2.0
 * The file_storage extension: config binding and validation, registration
 * under its id (so exporters can find it), start-time directory checks, and
 * an exporter-style spool opened through the registry. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipeline/component.h"
#include "storage/spool.h"
#include "storage/storage.h"
#include "pg_test.h"

extern const struct pg_component_ops pg_extension_file_storage;

static char root[64];

static enum pg_err create(const char *yaml, const char *id, void **state, struct pg_diag *diag,
                          struct pg_config **cfg_out)
{
    struct pg_config *cfg = pg_config_load_string("fs.yaml", yaml, strlen(yaml));
    struct pg_component_ctx ctx = {0};

    *cfg_out = cfg;
    *state = NULL;
    if (cfg == NULL || cfg->root == NULL) {
        return PG_ERR_CONFIG;
    }
    ctx.id = id;
    ctx.log_name = "extension/file_storage";
    ctx.config = cfg->root;
    ctx.config_arena = cfg->arena;
    ctx.diag = diag;
    ctx.path = "extensions::file_storage";
    return pg_extension_file_storage.create(&ctx, state);
}

PG_TEST(test_config_errors)
{
    static const struct {
        const char *yaml;
        const char *why;
    } cases[] = {
        {"directory: relative/dir\n", "absolute path"},
        {"directory: /tmp/x\nmax_size: 1000\n", "at least 1MiB"},
        {"directory: /tmp/x\nfsync: sometimes\n", "always"},
        {"directory: /tmp/x\nfsync: interval\nfsync_interval: 0s\n", "fsync_interval"},
        {"directory: /tmp/x\ncompaction: {}\n", "compaction"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_diag diag;
        struct pg_config *cfg;
        void *state;
        bool found = false;

        pg_diag_init(&diag);
        CHECK_INT(create(cases[i].yaml, "file_storage", &state, &diag, &cfg), PG_ERR_CONFIG);
        CHECK(state == NULL);
        for (size_t k = 0; k < diag.n; k++) {
            found = found || strstr(diag.msgs[k], cases[i].why) != NULL;
        }
        if (!found) {
            fprintf(stderr, "  case %zu: no diag with \"%s\"\n", i, cases[i].why);
            for (size_t k = 0; k < diag.n; k++) {
                fprintf(stderr, "    %s\n", diag.msgs[k]);
            }
            CHECK(false);
        }
        CHECK(!pg_storage_known("file_storage"));
        pg_diag_free(&diag);
        pg_config_free(cfg);
    }
}

PG_TEST(test_register_start_open)
{
    char yaml[256], sub[256];
    struct pg_diag diag;
    struct pg_config *cfg;
    struct pg_status st;
    struct pg_spool *sp = NULL;
    struct stat sb;
    void *state;
    uint64_t id;

    snprintf(root, sizeof(root), "/tmp/pg_test_fs.XXXXXX");
    CHECK(mkdtemp(root) != NULL);
    snprintf(yaml, sizeof(yaml), "directory: %s/data\nfsync: interval\nfsync_interval: 50ms\n"
                                 "max_size: 2MiB\n", root);
    pg_diag_init(&diag);
    CHECK_INT(create(yaml, "file_storage/q", &state, &diag, &cfg), PG_ERR_OK);
    CHECK_INT(diag.n, 0);
    CHECK(pg_storage_known("file_storage/q"));
    if (state != NULL) {
        /* No event base here: start checks the directory only. */
        CHECK_INT(pg_extension_file_storage.start(state, &st), PG_ERR_OK);
        snprintf(sub, sizeof(sub), "%s/data", root);
        CHECK(stat(sub, &sb) == 0 && S_ISDIR(sb.st_mode));
        CHECK_INT(pg_storage_open("file_storage/q", "exporter/otlp", &sp, &st), PG_ERR_OK);
        if (sp != NULL) {
            CHECK_INT(pg_spool_append(sp, "payload", 7, &id, &st), PG_ERR_OK);
            pg_storage_sync_all();
            {
                /* The extension's max_size reached the spool. */
                char *big = calloc(1, 3u << 20);
                CHECK_INT(pg_spool_append(sp, big, 3u << 20, &id, &st), PG_ERR_LIMIT);
                free(big);
            }
            pg_storage_close(sp);
        }
        snprintf(sub, sizeof(sub), "%s/data/exporter_otlp/LOCK", root);
        CHECK(stat(sub, &sb) == 0);
        pg_extension_file_storage.shutdown(state);
        pg_extension_file_storage.destroy(state);
    }
    CHECK(!pg_storage_known("file_storage/q"));
    pg_diag_free(&diag);
    pg_config_free(cfg);
}

PG_TEST(test_unwritable_directory)
{
    struct pg_diag diag;
    struct pg_config *cfg;
    struct pg_status st;
    void *state;

    pg_diag_init(&diag);
    /* A path under a regular file can never be created. */
    CHECK_INT(create("directory: /etc/hostname/spool\n", "file_storage", &state, &diag, &cfg),
              PG_ERR_OK);
    if (state != NULL) {
        CHECK(pg_extension_file_storage.start(state, &st) != PG_ERR_OK);
        CHECK(strstr(st.msg, "/etc/hostname/spool") != NULL);
        pg_extension_file_storage.shutdown(state);
        pg_extension_file_storage.destroy(state);
    }
    pg_diag_free(&diag);
    pg_config_free(cfg);
}

PG_TEST(test_zz_cleanup)
{
    char cmd[128];
    if (root[0] != '\0') {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        CHECK(system(cmd) == 0);
    }
}

PG_TEST_MAIN(PG_CASE(test_config_errors), PG_CASE(test_register_start_open),
             PG_CASE(test_unwritable_directory), PG_CASE(test_zz_cleanup))
