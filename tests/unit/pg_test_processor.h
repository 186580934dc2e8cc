/* SPDX-License-Identifier: Apache-2.0
 * A processor or exporter created from a `processors:` / `exporters:` YAML
 * document, for unit tests. */
#ifndef PG_TEST_PROCESSOR_H
#define PG_TEST_PROCESSOR_H

#include <stdio.h>
#include <string.h>

#include "pipeline/component.h"
#include "core/config.h"

struct pg_proc_fixture {
    const struct pg_component_ops *ops;
    struct pg_config *cfg; /* owned */
    void *state;           /* owned; NULL when create failed */
    enum pg_err err;       /* what create() returned */
    char log_name[64];     /* borrowed by the processor until destroy */
};

/* Loads @yaml and creates <section>::<ops->type> from it (problems in
 * cfg->diag); @section is "processors" or "exporters". */
static inline void pg_comp_setup(struct pg_proc_fixture *f, const struct pg_component_ops *ops,
                                 const char *section, const char *yaml)
{
    struct pg_component_ctx ctx;
    const struct pg_cfg_node *procs;

    memset(f, 0, sizeof(*f));
    f->ops = ops;
    snprintf(f->log_name, sizeof(f->log_name), "%.*s/%s",
             (int)strlen(section) - 1, section, ops->type); /* "processor/x", "exporter/x" */
    f->cfg = pg_config_load_string("test.yaml", yaml, strlen(yaml));
    procs = f->cfg->root ? pg_cfg_get(f->cfg->root, section) : NULL;
    memset(&ctx, 0, sizeof(ctx));
    ctx.id = ops->type;
    ctx.log_name = f->log_name;
    ctx.config = procs ? pg_cfg_get(procs, ops->type) : NULL;
    ctx.config_arena = f->cfg->arena;
    ctx.diag = &f->cfg->diag;
    f->err = ops->create(&ctx, &f->state);
}

static inline void pg_proc_setup(struct pg_proc_fixture *f, const struct pg_component_ops *ops,
                                 const char *yaml)
{
    pg_comp_setup(f, ops, "processors", yaml);
}

static inline void pg_proc_teardown(struct pg_proc_fixture *f)
{
    if (f->state != NULL) {
        f->ops->shutdown(f->state);
        f->ops->destroy(f->state);
    }
    pg_config_free(f->cfg);
}

#endif
