/* SPDX-License-Identifier: Apache-2.0
 * Pull mode without the network: Prometheus relabeling (every action,
 * defaults, anchoring, template expansion, hashmod, RE2-only syntax), Parca
 * scrape_config defaults and inheritance, remote:, labels -> resource
 * attributes, and file_sd target-group parsing. */
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"
#include "pg_test_diag.h"

#include "core/config.h"
#include "core/log.h"
#include "scrape/file_sd.h"
#include "scrape/k8s_sd.h"

#include <json-c/json.h>
#include "scrape/casemap.h"
#include "scrape/relabel.h"
#include "scrape/scrape.h"
#include "scrape/scrape_config.h"

/* "a=1|b=2" -> labels */
static void parse_labels(const char *s, struct pg_labels *l)
{
    char buf[1024], *save = NULL;

    memset(l, 0, sizeof(*l));
    snprintf(buf, sizeof(buf), "%s", s);
    for (char *tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
        char *eq = strchr(tok, '=');

        *eq = '\0';
        pg_labels_set(l, tok, eq + 1);
    }
}

static void format_labels(const struct pg_labels *l, char *buf, size_t cap)
{
    size_t off = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < l->n && off < cap; i++) {
        off += (size_t)snprintf(buf + off, cap - off, "%s%s=%s", i ? "|" : "", l->v[i].name,
                                l->v[i].value);
    }
}

struct relabel_case {
    const char *name;
    const char *rules; /* YAML flow list */
    const char *in;
    const char *want;  /* NULL = dropped */
};

static const struct relabel_case relabel_cases[] = {
    {"replace defaults copy the value", "[{source_labels: [a], target_label: b}]", "a=foo",
     "a=foo|b=foo"},
    {"regex groups and $$-escaped ${1}", "[{source_labels: [a], regex: 'f(.*)', "
                                         "replacement: '$${1}bar', target_label: b}]",
     "a=foo", "a=foo|b=oobar"},
    {"$1x names a group that does not exist", "[{source_labels: [a], regex: 'f(.*)', "
                                              "replacement: '$1x', target_label: b}]",
     "a=foo", "a=foo"},
    {"named group", "[{source_labels: [a], regex: '(?P<n>o+)$$|f(?P<m>o+)', replacement: '$m', "
                    "target_label: b}]",
     "a=foo", "a=foo|b=oo"},
    {"$$ is a literal dollar", "[{source_labels: [a], replacement: 'x$$$$y', target_label: b}]",
     "a=foo", "a=foo|b=x$y"},
    {"regex is fully anchored", "[{source_labels: [a], regex: 'o', target_label: b}]", "a=foo",
     "a=foo"},
    {"dot matches newline", "[{source_labels: [a], regex: 'x.y', replacement: ok, "
                            "target_label: b}]",
     "a=x\ny", "a=x\ny|b=ok"},
    {"separator joins sources, missing = empty",
     "[{source_labels: [a, z, b], separator: /, target_label: c}]", "a=x|b=y", "a=x|b=y|c=x//y"},
    {"empty result deletes the target", "[{source_labels: [z], target_label: a}]", "a=x", ""},
    {"constant replacement (the guide's service.name rule)",
     "[{target_label: service.name, replacement: my-go-service}]", "a=x",
     "a=x|service.name=my-go-service"},
    {"target_label expands groups", "[{source_labels: [a], regex: '(.*)', target_label: 'l_$1', "
                                    "replacement: v}]",
     "a=foo", "a=foo|l_foo=v"},
    {"keep matches", "[{action: keep, source_labels: [a], regex: 'fo+'}]", "a=foo", "a=foo"},
    {"keep drops", "[{action: keep, source_labels: [a], regex: 'fo'}]", "a=foo", NULL},
    {"action names are case-insensitive", "[{action: Drop, source_labels: [a], regex: foo}]",
     "a=foo", NULL},
    {"drop keeps the rest", "[{action: drop, source_labels: [a], regex: bar}]", "a=foo", "a=foo"},
    {"keepequal", "[{action: keepequal, source_labels: [a], target_label: b}]", "a=1|b=1",
     "a=1|b=1"},
    {"keepequal drops", "[{action: keepequal, source_labels: [a], target_label: b}]", "a=1|b=2",
     NULL},
    {"dropequal", "[{action: dropequal, source_labels: [a], target_label: b}]", "a=1|b=1", NULL},
    {"hashmod (md5, low 8 bytes)", "[{action: hashmod, source_labels: [a], modulus: 1000, "
                                   "target_label: h}]",
     "a=foo", "a=foo|h=696"},
    {"hashmod of an address", "[{action: hashmod, source_labels: [__address__], modulus: 10, "
                              "target_label: h}]",
     "__address__=127.0.0.1:6060", "__address__=127.0.0.1:6060|h=6"},
    {"labelmap", "[{action: labelmap, regex: '__meta_(.*)', replacement: 'k_$1'}]",
     "__meta_x=1|__meta_y=2|z=3", "__meta_x=1|__meta_y=2|k_x=1|k_y=2|z=3"},
    {"labeldrop", "[{action: labeldrop, regex: '__meta_.*'}]", "__meta_x=1|z=3", "z=3"},
    {"labelkeep", "[{action: labelkeep, regex: 'z|y'}]", "__meta_x=1|y=2|z=3", "y=2|z=3"},
    {"lowercase", "[{action: lowercase, source_labels: [a], target_label: b}]", "a=FoO",
     "a=FoO|b=foo"},
    {"uppercase", "[{action: uppercase, source_labels: [a, c], target_label: b}]", "a=FoO|c=x",
     "a=FoO|b=FOO;X|c=x"},
    {"lowercase is Unicode (Go's strings.ToLower)",
     "[{action: lowercase, source_labels: [a], target_label: b}]", "a=ÀÉÎÕÜ-ĞİŁŽ-ΑΘΏ-ДЖЯЁ-Ա",
     "a=ÀÉÎÕÜ-ĞİŁŽ-ΑΘΏ-ДЖЯЁ-Ա|b=àéîõü-ğiłž-αθώ-джяё-ա"},
    {"uppercase is Unicode", "[{action: uppercase, source_labels: [a], target_label: b}]",
     "a=straße-ÿµ-ıſ-σς-щїґ-日本", "a=straße-ÿµ-ıſ-σς-щїґ-日本|b=STRAßE-ŸΜ-IS-ΣΣ-ЩЇҐ-日本"},
    {"rules apply in order",
     "[{action: keep, source_labels: [__meta_kubernetes_pod_phase], regex: Running},"
     " {source_labels: [__meta_kubernetes_pod_uid, __meta_kubernetes_pod_container_name],"
     " separator: /, target_label: service.instance.id}]",
     "__meta_kubernetes_pod_phase=Running|__meta_kubernetes_pod_uid=u1|"
     "__meta_kubernetes_pod_container_name=app",
     "__meta_kubernetes_pod_container_name=app|__meta_kubernetes_pod_phase=Running|"
     "__meta_kubernetes_pod_uid=u1|service.instance.id=u1/app"},
};

static bool load_rules(const char *yaml, struct pg_config **cfg, struct pg_diag *d,
                       struct pg_relabel_rule **rules, size_t *n)
{
    char text[2048];
    size_t problems;

    snprintf(text, sizeof(text), "r: %s\n", yaml);
    *cfg = pg_config_load_string("test", text, strlen(text));
    if (*cfg == NULL || (*cfg)->root == NULL) {
        return false;
    }
    problems = pg_relabel_parse((*cfg)->arena, d, pg_cfg_get((*cfg)->root, "r"), "r", rules, n);
    return problems == 0;
}

PG_TEST(test_relabel_table)
{
    for (size_t i = 0; i < sizeof(relabel_cases) / sizeof(relabel_cases[0]); i++) {
        const struct relabel_case *c = &relabel_cases[i];
        struct pg_config *cfg = NULL;
        struct pg_diag d;
        struct pg_relabel_rule *rules = NULL;
        size_t n = 0;
        struct pg_labels l;
        char got[1024];
        bool kept;

        pg_diag_init(&d);
        if (!load_rules(c->rules, &cfg, &d, &rules, &n)) {
            fprintf(stderr, "  %s: rules did not load: %s\n", c->name, d.n ? d.msgs[0] : "?");
            CHECK(false);
            pg_diag_free(&d);
            pg_config_free(cfg);
            continue;
        }
        parse_labels(c->in, &l);
        kept = pg_relabel_apply(rules, n, &l);
        if (c->want == NULL) {
            if (kept) {
                fprintf(stderr, "  %s: kept, want dropped\n", c->name);
            }
            CHECK(!kept);
        } else {
            format_labels(&l, got, sizeof(got));
            if (!kept || strcmp(got, c->want) != 0) {
                fprintf(stderr, "  %s: got %s \"%s\", want \"%s\"\n", c->name,
                        kept ? "kept" : "dropped", got, c->want);
                CHECK(false);
            }
        }
        pg_labels_free(&l);
        pg_relabel_rules_free(rules, n);
        pg_diag_free(&d);
        pg_config_free(cfg);
    }
}

PG_TEST(test_relabel_rejects)
{
    static const struct {
        const char *rules, *why;
    } bad[] = {
        {"[{source_labels: [a], regex: '(a)\\1', target_label: b}]", "backreferences"},
        {"[{source_labels: [a], regex: 'a(?=b)', target_label: b}]", "lookahead"},
        {"[{source_labels: [a], regex: '(?<!a)b', target_label: b}]", "lookbehind"},
        {"[{source_labels: [a], regex: 'a++', target_label: b}]", "possessive"},
        {"[{source_labels: [a], regex: '(?>a)', target_label: b}]", "not supported by RE2"},
        {"[{source_labels: [a], regex: '(a', target_label: b}]", "regex \"(a\""},
        {"[{action: hashmod, source_labels: [a], target_label: b}]", "modulus"},
        {"[{action: frobnicate}]", "unknown relabel action"},
        {"[{source_labels: [a]}]", "requires target_label"},
        {"[{action: labeldrop, regex: a, target_label: b}]", "takes only regex"},
        {"[{action: lowercase, source_labels: [a], target_label: b, replacement: x}]",
         "no replacement"},
        {"[{action: keepequal, source_labels: [a], target_label: b, regex: x}]",
         "only source_labels and target_label"},
        {"[{source_labels: [a], target_label: b, color: red}]", "color"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct pg_config *cfg = NULL;
        struct pg_diag d;
        struct pg_relabel_rule *rules = NULL;
        size_t n = 0;

        pg_diag_init(&d);
        CHECK(!load_rules(bad[i].rules, &cfg, &d, &rules, &n));
        CHECK(rules == NULL);
        CHECK(pg_test_diag_has(&d, bad[i].why));
        pg_diag_free(&d);
        pg_config_free(cfg);
    }
    /* RE2 accepts these; so must we. */
    CHECK(pg_relabel_re2_check("(?i)foo|[\\d]+|(?P<x>a)|\\.|[(?=]") == NULL);
}

/* ---- config ---------------------------------------------------------- */

static size_t load_scrape(const char *yaml, struct pg_config **cfg, struct pg_diag *d,
                          struct pg_scrape_config *out)
{
    *cfg = pg_config_load_string("test", yaml, strlen(yaml));
    if (*cfg == NULL || (*cfg)->root == NULL) {
        return 99;
    }
    return pg_scrape_config_parse((*cfg)->arena, d, pg_cfg_get((*cfg)->root, "scrape"),
                                  pg_cfg_get((*cfg)->root, "remote"), "receivers::pprof", out);
}

PG_TEST(test_config_defaults)
{
    struct pg_config *cfg;
    struct pg_diag d;
    struct pg_scrape_config sc;
    char desc[1024];

    pg_diag_init(&d);
    CHECK_INT(load_scrape("scrape:\n  scrape_configs:\n    - job_name: j\n"
                          "      static_configs: [{targets: ['127.0.0.1:6060']}]\n",
                          &cfg, &d, &sc),
              0);
    CHECK_INT(sc.n_jobs, 1);
    CHECK_INT(sc.jobs[0].interval_ns, 10000000000LL);
    CHECK_INT(sc.jobs[0].timeout_ns, 13000000000LL);
    CHECK_STR(sc.jobs[0].scheme, "http");
    pg_scrape_job_describe(&sc.jobs[0], desc, sizeof(desc));
    CHECK_STR(desc, "memory /debug/pprof/allocs; block /debug/pprof/block; goroutine "
                    "/debug/pprof/goroutine; mutex /debug/pprof/mutex; process_cpu "
                    "/debug/pprof/profile?seconds=10");
    pg_scrape_config_free(&sc);
    pg_diag_free(&d);
    pg_config_free(cfg);
}

PG_TEST(test_config_guide_merge)
{
    /* The guide's block (kubernetes_sd_configs aside), pasted as written. */
    static const char yaml[] =
        "scrape:\n"
        "  scrape_configs:\n"
        "    - job_name: my-go-service-memory\n"
        "      scrape_interval: 60s\n"
        "      static_configs: [{targets: ['10.0.0.1:6060']}]\n"
        "      profiling_config:\n"
        "        path_prefix: /svc\n"
        "        pprof_config:\n"
        "          memory:\n"
        "            path: /debug/pprof/allocs\n"
        "            keep_sample_type: [{type: inuse_space, unit: bytes}]\n"
        "          block: {enabled: false}\n"
        "          goroutine: {enabled: false}\n"
        "          mutex: {enabled: false}\n"
        "          process_cpu: {enabled: true}\n"
        "          fgprof: {path: /debug/fgprof, delta: true}\n"
        "      relabel_configs:\n"
        "        - {action: keep, source_labels: [__meta_kubernetes_pod_phase], regex: Running}\n"
        "        - {target_label: service.name, replacement: my-go-service}\n";
    struct pg_config *cfg;
    struct pg_diag d;
    struct pg_scrape_config sc;
    char desc[1024];

    pg_diag_init(&d);
    CHECK_INT(load_scrape(yaml, &cfg, &d, &sc), 0);
    CHECK_INT(sc.n_jobs, 1);
    CHECK_INT(sc.jobs[0].timeout_ns, 63000000000LL);
    CHECK_INT(sc.jobs[0].n_relabel, 2);
    pg_scrape_job_describe(&sc.jobs[0], desc, sizeof(desc));
    /* process_cpu listed without delta loses the default delta (Parca). */
    CHECK_STR(desc, "memory /svc/debug/pprof/allocs keep inuse_space/bytes; process_cpu "
                    "/svc/debug/pprof/profile; fgprof /svc/debug/fgprof?seconds=60");
    pg_scrape_config_free(&sc);
    pg_diag_free(&d);
    pg_config_free(cfg);
}

PG_TEST(test_config_errors)
{
    static const struct {
        const char *yaml, *why;
    } bad[] = {
        {"scrape:\n  scrape_configs:\n    - {static_configs: []}\n", "job_name is required"},
        {"scrape:\n  scrape_configs:\n    - {job_name: a}\n    - {job_name: a}\n", "used twice"},
        {"scrape:\n  scrape_configs:\n    - {job_name: a, scrape_timeout: 5s, profiling_config: "
         "{pprof_config: {process_cpu: {delta: true, seconds: 5}}}}\n",
         "the timeout must be longer"},
        {"scrape:\n  scrape_configs:\n    - {job_name: a, profiling_config: {pprof_config: "
         "{custom: {enabled: true}}}}\n",
         "custom profile needs a path"},
        {"scrape:\n  scrape_configs:\n    - {job_name: a, scheme: ftp}\n", "http or https"},
        {"scrape:\n  scrape_configs:\n    - {job_name: a, kubernetes_sd_configs: [{role: node}]}\n",
         "only pod"},
        {"scrape:\n  scrape_configs:\n    - {job_name: a, kubernetes_sd_configs: [{role: pod, "
         "selectors: [{role: node, field: x=y}]}]}\n",
         "only selectors with role: pod"},
        {"scrape:\n  scrape_configs:\n    - {job_name: a, kubernetes_sd_configs: [{role: pod, "
         "kubeconfig_file: /k}]}\n",
         "kubeconfig_file is not supported"},
        {"scrape:\n  scrape_configs:\n    - {job_name: a, kubernetes_sd_configs: [{role: pod, "
         "attach_metadata: {node: true}}]}\n",
         "attach_metadata.node: true is not supported"},
        {"scrape:\n  scrape_configs:\n    - {job_name: a, kubernetes_sd_configs: [{role: pod, "
         "attach_metadata: {namespace: true}}]}\n",
         "attach_metadata.namespace: true is not supported"},
        {"scrape:\n  scrape_configs:\n    - {job_name: a, kubernetes_sd_configs: [{role: pod, "
         "attach_metadata: {nodes: false}}]}\n",
         "attach_metadata.nodes: unknown key"},
        {"scrape:\n  scrape_configs:\n    - {job_name: a, kubernetes_sd_configs: [{role: pod, "
         "attach_metadata: {node: maybe}}]}\n",
         "attach_metadata.node must be true or false"},
        {"scrape:\n  scrape_configs:\n    - {job_name: a, scrape_intervall: 5s}\n",
         "scrape_intervall"},
        {"scrape:\n  scrape_configs:\n    - {job_name: a, file_sd_configs: [{files: [t.txt]}]}\n",
         "must end in .json"},
        {"remote: {collection_interval: 5s}\n", "remote.endpoint must be specified"},
    };

    /* attach_metadata: false is what happens anyway: accepted. */
    {
        struct pg_config *cfg;
        struct pg_diag d;
        struct pg_scrape_config sc;

        pg_diag_init(&d);
        CHECK_INT(load_scrape("scrape:\n  scrape_configs:\n    - {job_name: a, "
                              "kubernetes_sd_configs: [{role: pod, attach_metadata: "
                              "{node: false, namespace: false}}]}\n",
                              &cfg, &d, &sc),
                  0);
        pg_scrape_config_free(&sc);
        pg_diag_free(&d);
        pg_config_free(cfg);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct pg_config *cfg;
        struct pg_diag d;
        struct pg_scrape_config sc;

        pg_diag_init(&d);
        CHECK(load_scrape(bad[i].yaml, &cfg, &d, &sc) > 0);
        CHECK(pg_test_diag_has(&d, bad[i].why));
        pg_scrape_config_free(&sc);
        pg_diag_free(&d);
        pg_config_free(cfg);
    }
}

PG_TEST(test_config_remote)
{
    struct pg_config *cfg;
    struct pg_diag d;
    struct pg_scrape_config sc;

    pg_diag_init(&d);
    CHECK_INT(load_scrape("remote:\n  endpoint: http://127.0.0.1:6060/debug/pprof/profile?seconds=1\n"
                          "  headers: {x-a: b}\n",
                          &cfg, &d, &sc),
              0);
    CHECK_INT(sc.n_jobs, 1);
    CHECK(sc.jobs[0].is_remote);
    CHECK_INT(sc.jobs[0].interval_ns, 10000000000LL);
    CHECK_INT(sc.jobs[0].initial_delay_ns, 1000000000LL);
    CHECK_STR(sc.jobs[0].profiles[0].path, "/debug/pprof/profile?seconds=1");
    CHECK_STR(sc.jobs[0].groups[0].targets.v[0], "127.0.0.1:6060");
    CHECK_STR(sc.jobs[0].scheme, "http");
    CHECK_INT(sc.jobs[0].client.headers.n, 1);
    pg_scrape_config_free(&sc);
    pg_diag_free(&d);
    pg_config_free(cfg);
}

PG_TEST(test_resource_labels)
{
    static const struct {
        const char *in, *want;
        bool remote;
    } cases[] = {
        {"job=j|instance=h:1|team=a|__name__=memory", "service.instance.id=h:1|service.name=j|team=a",
         false},
        {"job=j|instance=h:1|service.name=s|service.instance.id=u/c",
         "service.instance.id=u/c|service.name=s", false},
        {"job=remote|instance=h:1|x=y", "x=y", true},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_labels in, out;
        char got[512];

        parse_labels(cases[i].in, &in);
        CHECK(pg_scrape_resource_labels(&in, cases[i].remote, &out));
        format_labels(&out, got, sizeof(got));
        CHECK_STR(got, cases[i].want);
        pg_labels_free(&in);
        pg_labels_free(&out);
    }
}

struct groups_seen {
    size_t n;
    char text[1024];
};

static void collect(void *arg, size_t index, const char *const *targets, size_t n,
                    const struct pg_labels *labels)
{
    struct groups_seen *g = arg;
    size_t off = strlen(g->text);
    char l[400];

    format_labels(labels, l, sizeof(l));
    off += (size_t)snprintf(g->text + off, sizeof(g->text) - off, "[%zu:", index);
    for (size_t i = 0; i < n; i++) {
        off += (size_t)snprintf(g->text + off, sizeof(g->text) - off, "%s,", targets[i]);
    }
    snprintf(g->text + off, sizeof(g->text) - off, "%s]", l);
    g->n++;
}

PG_TEST(test_file_sd_parse)
{
    static const char json[] = "[\n  {\"targets\": [\"a:1\", \"b:2\"],\n"
                               "   \"labels\": {\"env\": \"prod\"}},\n  {\"targets\": []}\n]\n";
    static const char yml[] = "- targets: ['c:3']\n  labels:\n    team: x\n";
    struct groups_seen g = {0};
    char why[300];

    CHECK_INT(pg_file_sd_parse("/t/a.json", json, strlen(json), collect, &g, why, sizeof(why)), 2);
    CHECK_STR(g.text, "[0:a:1,b:2,__meta_filepath=/t/a.json|env=prod][1:__meta_filepath=/t/a.json]");
    memset(&g, 0, sizeof(g));
    CHECK_INT(pg_file_sd_parse("/t/b.yml", yml, strlen(yml), collect, &g, why, sizeof(why)), 1);
    CHECK_STR(g.text, "[0:c:3,__meta_filepath=/t/b.yml|team=x]");
    CHECK_INT(pg_file_sd_parse("x.json", "[{\"targets\": [", 14, NULL, NULL, why, sizeof(why)), -1);
    CHECK_INT(pg_file_sd_parse("x.json", "[{\"hosts\": []}]", 15, NULL, NULL, why, sizeof(why)),
              -1);
    CHECK(strstr(why, "unknown key") != NULL);
    CHECK_INT(pg_file_sd_parse("x.json", "{\"a\": 1}", 8, NULL, NULL, why, sizeof(why)), -1);
}


PG_TEST(test_config_guide_k8s)
{
    /* The Parca guide's scrape block with ${env:...} for its sed step. */
    static const char yaml[] =
        "scrape:\n"
        "  scrape_configs:\n"
        "    - job_name: my-go-service-memory\n"
        "      scrape_interval: 60s\n"
        "      kubernetes_sd_configs:\n"
        "        - role: pod\n"
        "          namespaces: {names: [default]}\n"
        "          selectors:\n"
        "            - role: pod\n"
        "              field: spec.nodeName=${env:PG_TEST_NODE:-node-a}\n"
        "              label: app.kubernetes.io/name=my-go-service\n"
        "      profiling_config:\n"
        "        pprof_config:\n"
        "          memory: {path: /debug/pprof/allocs, keep_sample_type: [{type: inuse_space, "
        "unit: bytes}]}\n"
        "          block: {enabled: false}\n"
        "          goroutine: {enabled: false}\n"
        "          mutex: {enabled: false}\n"
        "          process_cpu: {enabled: false}\n";
    struct pg_config *cfg;
    struct pg_diag d;
    struct pg_scrape_config sc;

    pg_diag_init(&d);
    CHECK_INT(load_scrape(yaml, &cfg, &d, &sc), 0);
    CHECK_INT(sc.jobs[0].n_k8s_sd, 1);
    CHECK_STR(sc.jobs[0].k8s_sd[0].field_selector, "spec.nodeName=node-a");
    CHECK_STR(sc.jobs[0].k8s_sd[0].label_selector, "app.kubernetes.io/name=my-go-service");
    CHECK_INT(sc.jobs[0].k8s_sd[0].namespaces.n, 1);
    CHECK(sc.jobs[0].k8s_sd[0].api_server == NULL);
    pg_scrape_config_free(&sc);
    pg_diag_free(&d);
    pg_config_free(cfg);
}

struct pod_seen {
    size_t calls, n;
    char text[4096];
};

static void pod_collect(void *arg, const struct pg_scrape_tg_target *tg, size_t n)
{
    struct pod_seen *p = arg;

    p->calls++;
    p->n += n;
    for (size_t i = 0; i < n; i++) {
        char l[2048];
        size_t off = strlen(p->text);

        format_labels(tg[i].labels, l, sizeof(l));
        snprintf(p->text + off, sizeof(p->text) - off, "[%s %s]", tg[i].address, l);
    }
}

PG_TEST(test_k8s_pod_targets)
{
    static const char pod[] =
        "{\"metadata\": {\"name\": \"web-1\", \"namespace\": \"default\", \"uid\": \"u-1\","
        " \"labels\": {\"app.kubernetes.io/name\": \"web\"}, \"annotations\": {\"a\": \"b\"},"
        " \"ownerReferences\": [{\"kind\": \"ReplicaSet\", \"name\": \"web-rs\", \"controller\": true}]},"
        " \"spec\": {\"nodeName\": \"node-a\", \"containers\": [{\"name\": \"app\", \"image\": \"img\","
        " \"ports\": [{\"name\": \"pprof\", \"containerPort\": 6060}, {\"name\": \"http\","
        " \"containerPort\": 8080, \"protocol\": \"TCP\"}]}, {\"name\": \"side\"}],"
        " \"initContainers\": [{\"name\": \"init\", \"ports\": [{\"containerPort\": 1}]}]},"
        " \"status\": {\"phase\": \"Running\", \"podIP\": \"10.1.2.3\", \"hostIP\": \"10.0.0.1\","
        " \"conditions\": [{\"type\": \"Ready\", \"status\": \"True\"}],"
        " \"containerStatuses\": [{\"name\": \"app\", \"containerID\": \"containerd://abc\"}]}}";
    char why[200];
    struct json_object *o = pg_k8s_json_parse(pod, strlen(pod), why, sizeof(why));
    struct pod_seen seen = {0};

    CHECK(o != NULL);
    pg_k8s_pod_targets(o, pod_collect, &seen);
    CHECK_INT(seen.calls, 1);
    CHECK_INT(seen.n, 4); /* two ports, one port-less container, one init container port */
    CHECK(strstr(seen.text, "[10.1.2.3:6060 ") != NULL);
    CHECK(strstr(seen.text, "[10.1.2.3 ") != NULL);
    CHECK(strstr(seen.text, "[10.1.2.3:1 ") != NULL);
    for (const char *want = "__meta_kubernetes_namespace=default|__meta_kubernetes_pod_annotation_a=b|"
                            "__meta_kubernetes_pod_annotationpresent_a=true|"
                            "__meta_kubernetes_pod_container_id=containerd://abc|"
                            "__meta_kubernetes_pod_container_image=img|"
                            "__meta_kubernetes_pod_container_init=false|"
                            "__meta_kubernetes_pod_container_name=app|"
                            "__meta_kubernetes_pod_container_port_name=pprof|"
                            "__meta_kubernetes_pod_container_port_number=6060|"
                            "__meta_kubernetes_pod_container_port_protocol=TCP|"
                            "__meta_kubernetes_pod_controller_kind=ReplicaSet|"
                            "__meta_kubernetes_pod_controller_name=web-rs|"
                            "__meta_kubernetes_pod_host_ip=10.0.0.1|__meta_kubernetes_pod_ip=10.1.2.3|"
                            "__meta_kubernetes_pod_label_app_kubernetes_io_name=web|"
                            "__meta_kubernetes_pod_labelpresent_app_kubernetes_io_name=true|"
                            "__meta_kubernetes_pod_name=web-1|__meta_kubernetes_pod_node_name=node-a|"
                            "__meta_kubernetes_pod_phase=Running|__meta_kubernetes_pod_ready=true|"
                            "__meta_kubernetes_pod_uid=u-1]";
         want != NULL; want = NULL) {
        if (strstr(seen.text, want) == NULL) {
            fprintf(stderr, "  pod labels: %s\n", seen.text);
            CHECK(false);
        }
    }
    CHECK(strstr(seen.text, "__meta_kubernetes_pod_container_init=true") != NULL);
    json_object_put(o);

    /* No pod IP yet: an empty group. */
    o = pg_k8s_json_parse("{\"metadata\": {\"name\": \"p\"}, \"status\": {}}", 41, why,
                          sizeof(why));
    CHECK(o != NULL);
    memset(&seen, 0, sizeof(seen));
    pg_k8s_pod_targets(o, pod_collect, &seen);
    CHECK_INT(seen.calls, 1);
    CHECK_INT(seen.n, 0);
    json_object_put(o);
}

struct events_seen {
    char types[256];
};

static bool ev_collect(void *arg, const char *type, struct json_object *obj)
{
    struct events_seen *e = arg;

    (void)obj;
    strncat(e->types, type, sizeof(e->types) - strlen(e->types) - 2);
    strncat(e->types, ",", sizeof(e->types) - strlen(e->types) - 1);
    return strcmp(type, "ERROR") != 0;
}

PG_TEST(test_k8s_stream)
{
    static const char s1[] = "{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"MODI";
    static const char s2[] = "FIED\",\"object\":{}}\n\n{\"type\":\"BOOKMARK\",\"object\":{}}\n"
                             "{\"type\":\"ERROR\",\"object\":{\"code\":410}}\n{\"type\":\"ADDED\"";
    struct pg_k8s_stream st = {0};
    struct events_seen e = {{0}};
    char why[200];

    /* Events split across reads are joined; ERROR stops the stream. */
    CHECK_INT(pg_k8s_stream_feed(&st, (const uint8_t *)s1, strlen(s1), ev_collect, &e, why,
                                 sizeof(why)),
              PG_K8S_FEED_OK);
    CHECK_INT(pg_k8s_stream_feed(&st, (const uint8_t *)s2, strlen(s2), ev_collect, &e, why,
                                 sizeof(why)),
              PG_K8S_FEED_STOP);
    CHECK_STR(e.types, "ADDED,MODIFIED,BOOKMARK,ERROR,");
    pg_k8s_stream_free(&st);
    CHECK_INT(pg_k8s_stream_feed(&st, (const uint8_t *)"not json\n", 9, ev_collect, &e, why,
                                 sizeof(why)),
              PG_K8S_FEED_BAD);
    pg_k8s_stream_free(&st);
    CHECK_INT(pg_k8s_stream_feed(&st, (const uint8_t *)"{\"type\":\"ADDED\"}\n", 17, ev_collect,
                                 &e, why, sizeof(why)),
              PG_K8S_FEED_BAD);
    pg_k8s_stream_free(&st);
    /* Depth limit. */
    {
        char deep[400];

        memset(deep, '[', 300);
        deep[300] = '\n';
        CHECK_INT(pg_k8s_stream_feed(&st, (const uint8_t *)deep, 301, ev_collect, &e, why,
                                     sizeof(why)),
                  PG_K8S_FEED_BAD);
        pg_k8s_stream_free(&st);
    }
}

/* params: every value sent (key repeated), keys sorted, a __param_ label
 * replacing the first value of its key, as Prometheus's url.Values. */
PG_TEST(test_params_query)
{
    static char *keys[] = {"match", "match", "debug", "x", "x"};
    static char *values[] = {"a b", "c", "1", "", "2"};
    static const struct {
        const char *labels, *start, *want;
        bool seconds;
    } cases[] = {
        {"", "/p", "/p?debug=1&match=a%20b&match=c&x=&x=2", false},
        {"__param_match=z", "/p", "/p?debug=1&match=z&match=c&x=&x=2", false},
        {"__param_seconds=10|__param_x=y", "/p", "/p?debug=1&match=a%20b&match=c&seconds=10&x=y&x=2",
         true},
        {"__param_aa=1", "/p?q=1", "/p?q=1&aa=1&debug=1&match=a%20b&match=c&x=&x=2", false},
    };
    struct pg_strmap params = {5, keys, values};
    struct pg_strmap none = {0, NULL, NULL};

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_labels l;
        char q[512];

        parse_labels(cases[i].labels, &l);
        snprintf(q, sizeof(q), "%s", cases[i].start);
        CHECK(pg_scrape_query(q, sizeof(q), &params, &l) == cases[i].seconds);
        CHECK_STR(q, cases[i].want);
        pg_labels_free(&l);
    }
    {
        struct pg_labels l;
        char q[64] = "/p";

        parse_labels("__param_k=v", &l);
        CHECK(!pg_scrape_query(q, sizeof(q), &none, &l));
        CHECK(strcmp(q, "/p?k=v") == 0);
        pg_labels_free(&l);
    }
}

/* Case mapping against Go's unicode.ToLower/ToUpper on code points chosen
 * at every range edge and exception, and byte handling of bad UTF-8. */
PG_TEST(test_case_mapping)
{
    static const struct {
        uint32_t upper, lower;
        int dir; /* 0: upper(lower) only, 1: both directions, 2: lower(upper) only */
    } pairs[] = {
        {'A', 'a', 1}, {'Z', 'z', 1}, {0xc0, 0xe0, 1}, {0xde, 0xfe, 1},
        {0xd7, 0xd7, 1}, {0xf7, 0xf7, 1}, {0xdf, 0xdf, 1}, {0x178, 0xff, 1},
        {0x39c, 0xb5, 0}, {0x100, 0x101, 1}, {0x12e, 0x12f, 1}, {0x130, 'i', 2},
        {'I', 0x131, 0}, {0x132, 0x133, 1}, {0x136, 0x137, 1}, {0x138, 0x138, 1},
        {0x139, 0x13a, 1}, {0x147, 0x148, 1}, {0x149, 0x149, 1}, {0x14a, 0x14b, 1},
        {0x176, 0x177, 1}, {0x179, 0x17a, 1}, {0x17d, 0x17e, 1}, {'S', 0x17f, 0},
        {0x386, 0x3ac, 1}, {0x388, 0x3ad, 1}, {0x38a, 0x3af, 1}, {0x38c, 0x3cc, 1},
        {0x38e, 0x3cd, 1}, {0x38f, 0x3ce, 1}, {0x391, 0x3b1, 1}, {0x3a1, 0x3c1, 1},
        {0x3a3, 0x3c3, 1}, {0x3a3, 0x3c2, 0}, {0x3ab, 0x3cb, 1}, {0x400, 0x450, 1},
        {0x40f, 0x45f, 1}, {0x410, 0x430, 1}, {0x42f, 0x44f, 1}, {0x460, 0x461, 1},
        {0x480, 0x481, 1}, {0x48a, 0x48b, 1}, {0x4be, 0x4bf, 1}, {0x4c0, 0x4cf, 1},
        {0x4c1, 0x4c2, 1}, {0x4cd, 0x4ce, 1}, {0x4d0, 0x4d1, 1}, {0x52e, 0x52f, 1},
        {0x531, 0x561, 1}, {0x556, 0x586, 1}, {0xff21, 0xff41, 1},
        {0xff3a, 0xff5a, 1}, {0x4e00, 0x4e00, 1},
    };
    char out[16];

    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        if (pairs[i].dir < 2) {
            CHECK_INT(pg_case_upper(pairs[i].lower), pairs[i].upper);
        }
        if (pairs[i].dir > 0) {
            CHECK_INT(pg_case_lower(pairs[i].upper), pairs[i].lower);
        }
    }
    /* Invalid bytes and 4-byte sequences pass through; truncation keeps
     * whole characters. */
    CHECK_INT(pg_utf8_case(out, sizeof(out), "A\xff\xc3" "B\xf0\x9f\x98\x80", false), 8);
    CHECK_STR(out, "a\xff\xc3" "b\xf0\x9f\x98\x80");
    CHECK_INT(pg_utf8_case(out, 4, "\xc3\x80\xc3\x80", false), 2);
    CHECK_STR(out, "\xc3\xa0");
    CHECK_INT(pg_utf8_case(out, sizeof(out), "\xc4\xb0X", false), 2); /* İ shrinks to i */
    CHECK_STR(out, "ix");
}

PG_TEST_MAIN(PG_CASE(test_case_mapping), PG_CASE(test_params_query), PG_CASE(test_relabel_table), PG_CASE(test_relabel_rejects),
             PG_CASE(test_config_defaults), PG_CASE(test_config_guide_merge),
             PG_CASE(test_config_errors), PG_CASE(test_config_remote),
             PG_CASE(test_resource_labels), PG_CASE(test_file_sd_parse),
             PG_CASE(test_config_guide_k8s), PG_CASE(test_k8s_pod_targets),
             PG_CASE(test_k8s_stream))
