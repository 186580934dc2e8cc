/* SPDX-License-Identifier: Apache-2.0
 * pprofgate's command line: run the gateway, validate a config, list the
 * built-in components, print the version. Signals: SIGTERM/SIGINT stop
 * gracefully (service::shutdown_delay, then the drain) and exit 0; a second
 * one ends the delay; one during the drain exits at once. */
#include <event2/event.h>
#include <event2/thread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/arena.h"
#include "pipeline/component.h"
#include "core/config.h"
#include "core/log.h"
#include "otlp/otlp.h"
#include "pipeline/service.h"

#define SHUTDOWN_DEADLINE_NS (30LL * 1000000000LL)

#ifndef PG_INSTALL_CONFIG /* set by CMake from the install prefix */
#define PG_INSTALL_CONFIG "/usr/local/etc/pprofgate/pprofgate.yaml"
#endif
#ifndef PG_CONFIG_FROM_BINDIR
#define PG_CONFIG_FROM_BINDIR "../etc/pprofgate/pprofgate.yaml"
#endif
#define SOURCE_TREE_CONFIG "config/pprofgate.yaml"

struct signal_ctx {
    struct pg_service *svc;
    struct event_base *base;
    int count;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: pprofgate [--config FILE]          run the gateway\n"
            "       pprofgate validate --config FILE   check a config; lists every problem\n"
            "       pprofgate components               list receivers, processors, exporters, extensions\n"
            "       pprofgate --version                print the version and OTLP proto version\n"
            "--config also takes file:PATH and --config=FILE; --feature-gates=... (the\n"
            "collector's, e.g. +service.profilesSupport) is accepted and has no effect.\n"
            "Without --config: ./" SOURCE_TREE_CONFIG ", else the installed etc/pprofgate/\n"
            "pprofgate.yaml (next to the binary's prefix, then " PG_INSTALL_CONFIG ").\n");
}

static void print_version(void)
{
    printf("pprofgate %s (OTLP profiles %s, opentelemetry.proto.profiles.v1development)\n", PG_VERSION,
           PG_OTLP_PROTO_VERSION);
}

static int list_components(void)
{
    for (int k = PG_KIND_RECEIVER; k <= PG_KIND_EXTENSION; k++) {
        printf("%s:\n", pg_kind_section((enum pg_kind)k));
        for (size_t i = 0; i < pg_components_count; i++) {
            const struct pg_component_ops *o = pg_components[i];
            if (o == NULL || (int)o->kind != k || strcmp(o->type, "telemetry_metrics") == 0) {
                continue;
            }
            printf("  %s%s%s%s%s\n", o->type, o->alias ? " (alias " : "", o->alias ? o->alias : "",
                   o->alias ? ")" : "", "");
            if (o->doc != NULL) {
                printf("      %s\n", o->doc);
            }
            if (o->fields != NULL) {
                pg_cfg_print_fields(o->fields, 6, stdout);
            }
        }
    }
    printf("service:\n");
    pg_cfg_print_fields(pg_service_doc_fields, 2, stdout);
    return 0;
}

/* The file read when no --config is given: the source tree's default (what
 * `make run` uses), else the installed one, found from the executable's own
 * location (any `cmake --install --prefix`) or at the configure-time prefix.
 * NULL when none exists; @tried lists the candidates for the message. */
static const char *default_config(char *buf, size_t size, char *tried, size_t tried_size)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    const char *cands[3] = {SOURCE_TREE_CONFIG, NULL, PG_INSTALL_CONFIG};

    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash != NULL) {
            slash[1] = '\0';
            if (PG_CONFIG_FROM_BINDIR[0] == '/') {
                snprintf(buf, size, "%s", PG_CONFIG_FROM_BINDIR);
            } else {
                snprintf(buf, size, "%s%s", exe, PG_CONFIG_FROM_BINDIR);
            }
            cands[1] = buf;
        }
    }
    tried[0] = '\0';
    for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
        if (cands[i] == NULL) {
            continue;
        }
        if (access(cands[i], R_OK) == 0) {
            /* "/opt/x/bin/../etc/..." reads better as "/opt/x/etc/..." */
            if (cands[i] == buf && realpath(buf, exe) != NULL) {
                snprintf(buf, size, "%s", exe);
            }
            return cands[i];
        }
        snprintf(tried + strlen(tried), tried_size - strlen(tried), "%s%s", tried[0] ? ", " : "",
                 cands[i]);
    }
    return NULL;
}

/* Loads and builds; prints every problem and warning in file order.
 * Returns the service or NULL. */
static struct pg_service *load(const char *path, struct event_base *base, struct pg_config **cfg_out)
{
    struct pg_config *cfg = pg_config_load(path);
    struct pg_service *svc = NULL;
    const struct pg_diag *d;

    *cfg_out = cfg;
    if (cfg == NULL) {
        fprintf(stderr, "%s: out of memory loading the config\n", path);
        return NULL;
    }
    /* Built even after loading problems (a duplicate key, a bad ${...}), so
     * one run lists every problem. */
    if (cfg->root != NULL) {
        svc = pg_service_build(cfg, pg_components, pg_components_count, base, &cfg->diag);
    }
    d = &cfg->diag;
    if (d->n > 0) {
        pg_diag_print(d, stderr);
        fprintf(stderr, "%s: %zu problem%s", path, d->n, d->n == 1 ? "" : "s");
        if (d->n_warn > 0) {
            fprintf(stderr, ", %zu warning%s", d->n_warn, d->n_warn == 1 ? "" : "s");
        }
        fprintf(stderr, "\n");
        pg_service_free(svc);
        return NULL;
    }
    if (svc == NULL) {
        fprintf(stderr, "%s: the config could not be built\n", path);
        return NULL;
    }
    return svc;
}

static const char *signal_name(evutil_socket_t sig)
{
    return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "signal";
}

/* First signal: the graceful stop (service::shutdown_delay, then the
 * drain). Another one during the delay ends the delay; one during the
 * drain exits at once. */
static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct signal_ctx *sc = arg;

    (void)what;
    if (++sc->count > 1) {
        pg_log_info("main", "%s again", signal_name(sig));
        if (pg_service_end_delay(sc->svc)) {
            return;
        }
        pg_log_warn("main", "exiting without draining");
        exit(1);
    }
    pg_log_info("main", "%s received", signal_name(sig));
    pg_service_shutdown(sc->svc, SHUTDOWN_DEADLINE_NS);
}

static int run(const char *path)
{
    struct event_base *base;
    struct pg_config *cfg = NULL;
    struct pg_service *svc;
    struct pg_status st;
    struct signal_ctx sc = {0};
    struct event *sigterm;
    struct event *sigint;
    int rc = 0;

    signal(SIGPIPE, SIG_IGN);
    pg_arena_malloc_setup();
    evthread_use_pthreads();
    base = event_base_new();
    if (base == NULL) {
        fprintf(stderr, "cannot create the event loop\n");
        return 1;
    }
    svc = load(path, base, &cfg);
    if (svc == NULL) {
        pg_config_free(cfg);
        event_base_free(base);
        return 1;
    }
    sc.svc = svc;
    sc.base = base;
    sigterm = evsignal_new(base, SIGTERM, on_signal, &sc);
    sigint = evsignal_new(base, SIGINT, on_signal, &sc);
    if (sigterm == NULL || sigint == NULL || event_add(sigterm, NULL) != 0 ||
        event_add(sigint, NULL) != 0) {
        fprintf(stderr, "cannot install signal handlers\n");
        return 1;
    }
    for (size_t i = 0; i < cfg->diag.n_all; i++) {
        if (cfg->diag.all[i].warning) {
            pg_log_warn("config", "%s", cfg->diag.all[i].text);
        }
    }
    pg_status_clear(&st);
    if (pg_service_start(svc, &st) != PG_ERR_OK) {
        pg_log_error("main", "%s", pg_status_text(&st));
        rc = 1;
    } else {
        pg_log_info("main", "pprofgate %s running with %s", PG_VERSION, path);
        event_base_dispatch(base);
        pg_log_info("main", "exited cleanly");
    }
    event_free(sigterm);
    event_free(sigint);
    pg_service_free(svc);
    pg_config_free(cfg);
    event_base_free(base);
    pg_log_close_outputs(); /* every thread has ended */
    return rc;
}

/* The collector's --config takes a URI: a bare path or file:PATH is what
 * pprofgate reads; env:, yaml:, http: and the like are refused by name.
 * One --config only (the collector merges several). */
static int set_config(const char **config, int *n_config, const char *v)
{
    const char *colon = strchr(v, ':');

    if (++*n_config > 1) {
        fprintf(stderr, "one --config only: pprofgate does not merge configs\n");
        return 2;
    }
    if (strncmp(v, "file:", 5) == 0) {
        v += 5;
    } else if (colon != NULL && colon > v && strspn(v, "abcdefghijklmnopqrstuvwxyz") ==
                                                  (size_t)(colon - v)) {
        fprintf(stderr, "--config %s: only file paths (or file:PATH) are supported\n", v);
        return 2;
    }
    *config = v;
    return 0;
}

int main(int argc, char **argv)
{
    const char *config = NULL;
    char found[4200], tried[8600];
    const char *cmd = "run";
    int n_config = 0, bad;

    /* libevent's own warnings (accept failures under fd exhaustion, ...)
     * would otherwise go to stderr unthrottled: through our limiter. */
    event_set_log_callback(pg_log_libevent);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--config") == 0 || strcmp(a, "-c") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "%s needs a file\n", a);
                return 2;
            }
            if ((bad = set_config(&config, &n_config, argv[++i])) != 0) {
                return bad;
            }
        } else if (strncmp(a, "--config=", 9) == 0) {
            if ((bad = set_config(&config, &n_config, a + 9)) != 0) {
                return bad;
            }
        } else if (strcmp(a, "--feature-gates") == 0 || strncmp(a, "--feature-gates=", 16) == 0) {
            /* Collector manifests pass +service.profilesSupport; profiles are
             * all pprofgate does, so every gate is accepted as a no-op. */
            if (a[15] == '\0' && ++i >= argc) {
                fprintf(stderr, "--feature-gates needs a value\n");
                return 2;
            }
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-v") == 0 || strcmp(a, "version") == 0) {
            print_version();
            return 0;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 || strcmp(a, "help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "validate") == 0 || strcmp(a, "components") == 0 ||
                   strcmp(a, "run") == 0) {
            cmd = a;
        } else {
            fprintf(stderr, "unknown argument \"%s\"\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (strcmp(cmd, "components") == 0) {
        return list_components();
    }
    if (config == NULL) {
        config = default_config(found, sizeof(found), tried, sizeof(tried));
        if (config == NULL) {
            fprintf(stderr, "no --config given and no default config found (tried %s)\n", tried);
            return 1;
        }
        /* stderr: logging is not set up yet, and stdout is validate's answer. */
        fprintf(stderr, "no --config given: reading %s\n", config);
    }
    if (strcmp(cmd, "validate") == 0) {
        struct pg_config *cfg = NULL;
        struct event_base *base = event_base_new();
        struct pg_service *svc = load(config, base, &cfg);
        int rc = svc ? 0 : 1;
        if (svc != NULL) {
            pg_diag_print(&cfg->diag, stderr); /* warnings only, by now */
            if (cfg->diag.n_warn > 0) {
                printf("%s: valid, %zu warning%s\n", config, cfg->diag.n_warn,
                       cfg->diag.n_warn == 1 ? "" : "s");
            } else {
                printf("%s: valid\n", config);
            }
        }
        pg_service_free(svc);
        pg_config_free(cfg);
        event_base_free(base);
        return rc;
    }
    return run(config);
}
