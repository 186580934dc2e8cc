/* SPDX-License-Identifier: Apache-2.0
 * The storage registry: file_storage extensions register their spool options
 * under their id, exporters open their own spool through it, and a timer
 * syncs every spool opened that way. Process-global, thread-safe. */
#include "storage/storage.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

#define MAX_STORAGES 16

struct storage_entry {
    char *id;                     /* owned */
    struct pg_spool_options opt;  /* dir and log_name owned */
};

/* Lock order: storage_mu, then a spool's mu (pg_storage_sync_all syncs
 * tracked spools under storage_mu). Never the other way, and storage_mu is
 * not recursive: pg_spool_open/pg_storage_close (which untracks, taking
 * storage_mu) must run without it held. storage_lock() turns a violation
 * into an immediate abort with a message instead of a silent hang. */
static pthread_mutex_t storage_mu = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local bool storage_mu_mine;

static void storage_lock(void)
{
    if (storage_mu_mine) {
        pg_log_error("spool", "internal error: storage registry lock taken twice by one thread");
        abort();
    }
    pthread_mutex_lock(&storage_mu);
    storage_mu_mine = true;
}

static void storage_unlock(void)
{
    storage_mu_mine = false;
    pthread_mutex_unlock(&storage_mu);
}
static struct storage_entry storages[MAX_STORAGES];
/* Spools opened through pg_storage_open, for pg_storage_sync_all(). */
#define MAX_TRACKED 64
static struct pg_spool *tracked[MAX_TRACKED];

/* Forgets @s (@s need not be tracked). */
static void storage_untrack(struct pg_spool *s)
{
    storage_lock();
    for (size_t i = 0; i < MAX_TRACKED; i++) {
        if (tracked[i] == s) {
            tracked[i] = NULL;
        }
    }
    storage_unlock();
}

void pg_storage_close(struct pg_spool *s)
{
    if (s == NULL) {
        return;
    }
    storage_untrack(s);
    pg_spool_close(s);
}

void pg_storage_sync_all(void)
{
    storage_lock();
    for (size_t i = 0; i < MAX_TRACKED; i++) {
        if (tracked[i] != NULL) {
            struct pg_status st;
            if (pg_spool_sync(tracked[i], false, &st) != PG_ERR_OK) {
                pg_log_warn(pg_spool_log_name(tracked[i]), "%s", st.msg);
            }
        }
    }
    storage_unlock();
}

static void entry_clear(struct storage_entry *e)
{
    free(e->id);
    free((char *)e->opt.dir);
    free((char *)e->opt.log_name);
    memset(e, 0, sizeof(*e));
}

bool pg_storage_register(const char *id, const struct pg_spool_options *opt)
{
    bool ok = false;

    storage_lock();
    for (size_t i = 0; i < MAX_STORAGES; i++) {
        if (storages[i].id != NULL && strcmp(storages[i].id, id) == 0) {
            entry_clear(&storages[i]);
        }
    }
    for (size_t i = 0; i < MAX_STORAGES && !ok; i++) {
        struct storage_entry *e = &storages[i];
        if (e->id != NULL) {
            continue;
        }
        e->id = strdup(id);
        e->opt = *opt;
        e->opt.dir = opt->dir ? strdup(opt->dir) : NULL;
        e->opt.log_name = opt->log_name ? strdup(opt->log_name) : NULL;
        if (e->id == NULL || (opt->dir && e->opt.dir == NULL) ||
            (opt->log_name && e->opt.log_name == NULL)) {
            entry_clear(e);
            break;
        }
        ok = true;
    }
    storage_unlock();
    return ok;
}

void pg_storage_unregister(const char *id)
{
    storage_lock();
    for (size_t i = 0; i < MAX_STORAGES; i++) {
        if (storages[i].id != NULL && strcmp(storages[i].id, id) == 0) {
            entry_clear(&storages[i]);
        }
    }
    storage_unlock();
}

bool pg_storage_known(const char *id)
{
    bool found = false;
    storage_lock();
    for (size_t i = 0; i < MAX_STORAGES && !found; i++) {
        found = storages[i].id != NULL && strcmp(storages[i].id, id) == 0;
    }
    storage_unlock();
    return found;
}

const char *pg_storage_ids(void)
{
    static char buf[512];
    size_t off = 0;

    storage_lock();
    buf[0] = '\0';
    for (size_t i = 0; i < MAX_STORAGES; i++) {
        if (storages[i].id != NULL && off < sizeof(buf)) {
            int n = snprintf(buf + off, sizeof(buf) - off, "%s%s", off ? ", " : "",
                             storages[i].id);
            off += n > 0 ? (size_t)n : 0;
        }
    }
    storage_unlock();
    return buf[0] ? buf : "(none)";
}

enum pg_err pg_storage_open(const char *storage_id, const char *owner, struct pg_spool **out,
                            struct pg_status *st)
{
    struct pg_spool_options opt;
    char dir[4096];
    char sub[256];
    char log_name[256];
    bool found = false;
    enum pg_err err;
    size_t i;

    *out = NULL;
    storage_lock();
    for (i = 0; i < MAX_STORAGES; i++) {
        if (storages[i].id != NULL && strcmp(storages[i].id, storage_id) == 0) {
            found = true;
            break;
        }
    }
    if (!found) {
        storage_unlock();
        return pg_status_set(st, PG_ERR_CONFIG,
                             "storage \"%s\" is not a configured file_storage extension", storage_id);
    }
    opt = storages[i].opt;
    /* One sub-directory per owner: "exporter/otlp/a" -> "exporter_otlp_a". */
    snprintf(sub, sizeof(sub), "%s", owner);
    for (char *p = sub; *p; p++) {
        if (*p == '/' || *p == '\\' || *p == ':' || (*p == '.' && p == sub)) {
            *p = '_';
        }
    }
    snprintf(dir, sizeof(dir), "%s/%s", opt.dir, sub);
    opt.dir = dir;
    snprintf(log_name, sizeof(log_name), "%s", opt.log_name != NULL ? opt.log_name : "spool");
    opt.log_name = log_name;
    /* Open outside storage_mu (see the lock order above). */
    storage_unlock();
    err = pg_spool_open(&opt, out, st);
    if (err != PG_ERR_OK) {
        return err;
    }
    storage_lock();
    for (size_t k = 0; k < MAX_TRACKED; k++) {
        if (tracked[k] == NULL) {
            tracked[k] = *out;
            break;
        }
    }
    storage_unlock();
    return PG_ERR_OK;
}
