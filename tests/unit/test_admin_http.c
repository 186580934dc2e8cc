/* SPDX-License-Identifier: Apache-2.0
 * The admin extensions' shared listener: endpoint parsing, the config checks
 * every admin extension gets (endpoint, auth), and the authentication gate
 * on a real loop (requests over TCP): refused requests never reach the
 * extension's routes, accepted ones do, and each extension kind takes
 * `auth:` the same way. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>

#include "core/arena.h"
#include "pipeline/component.h"
#include "core/config.h"
#include "core/log.h"
#include "extension/admin_http.h"
#include "http/http_server.h"
#include "pg_test.h"
#include "pg_test_diag.h"

extern const struct pg_component_ops pg_extension_pprof;
extern const struct pg_component_ops pg_extension_health_check;
extern const struct pg_component_ops pg_extension_telemetry_metrics;

static char dir[64];

static const char *tmpfile_with(const char *name, const char *content)
{
    static char path[8][128];
    static int k;
    char *p = path[k++ % 8];

    if (dir[0] == '\0') {
        snprintf(dir, sizeof(dir), "/tmp/pg_test_admin.XXXXXX");
        if (mkdtemp(dir) == NULL) {
            exit(2);
        }
    }
    snprintf(p, 128, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f != NULL) {
        fputs(content, f);
        fclose(f);
    }
    return p;
}

PG_TEST(test_split_endpoint)
{
    static const struct {
        const char *ep;
        bool ok;
        const char *host;
        unsigned port;
    } cases[] = {
        {"localhost:1777", true, "localhost", 1777},
        {"127.0.0.1:0", true, "127.0.0.1", 0},
        {"[::1]:8888", true, "::1", 8888},
        {":13133", true, "0.0.0.0", 13133},
        {"0.0.0.0:65535", true, "0.0.0.0", 65535},
        {"localhost:65536", false, NULL, 0},
        {"localhost:-1", false, NULL, 0},
        {"localhost:", false, NULL, 0},
        {"localhost:12x", false, NULL, 0},
        {"localhost", false, NULL, 0},
        {"", false, NULL, 0},
        {NULL, false, NULL, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char host[64] = "";
        unsigned port = 99999;
        bool ok = pg_admin_split_endpoint(cases[i].ep, host, sizeof(host), &port);
        CHECK_INT(ok, cases[i].ok);
        if (ok && cases[i].ok) {
            CHECK_STR(host, cases[i].host);
            CHECK_INT(port, cases[i].port);
        }
    }
    char small[4];
    unsigned port;
    CHECK(!pg_admin_split_endpoint("localhost:1", small, sizeof(small), &port));
}

/* One extension instance made from YAML; torn down by fixture_free. */
struct fixture {
    struct event_base *base;
    struct pg_config *cfg;
    struct pg_arena *carena;
    struct pg_host host;
    struct pg_diag diag;
    struct pg_component_ctx ctx;
    const struct pg_component_ops *ops;
    void *state;
    enum pg_err rc;
};

static void fixture_make(struct fixture *f, const struct pg_component_ops *ops, const char *id,
                         const char *yaml)
{
    memset(f, 0, sizeof(*f));
    /* As main() does: telemetry_metrics renders on its own thread and wakes the loop
     * with event_active, which needs libevent's thread support. */
    evthread_use_pthreads();
    f->base = event_base_new();
    f->cfg = pg_config_load_string("t.yaml", yaml, strlen(yaml));
    f->carena = pg_arena_create(0);
    f->host.base = f->base;
    f->host.version = "0.1.0";
    pg_diag_init(&f->diag);
    f->ctx.host = &f->host;
    f->ctx.id = id;
    f->ctx.log_name = id;
    f->ctx.config = f->cfg ? f->cfg->root : NULL;
    f->ctx.config_arena = f->carena;
    f->ctx.diag = &f->diag;
    f->ops = ops;
    f->rc = ops->create(&f->ctx, &f->state);
}

static void fixture_free(struct fixture *f)
{
    if (f->state != NULL) {
        f->ops->shutdown(f->state);
        f->ops->destroy(f->state);
    }
    pg_diag_free(&f->diag);
    pg_config_free(f->cfg);
    pg_arena_destroy(f->carena);
    event_base_free(f->base);
}

PG_TEST(test_config_checks)
{
    const char *tok = tmpfile_with("token", "t0ken\n");
    const char *empty = tmpfile_with("empty", "\n");
    char yaml_ok[256], yaml_empty[256];
    snprintf(yaml_ok, sizeof(yaml_ok), "endpoint: 127.0.0.1:0\nauth: {bearer_token_file: %s}\n",
             tok);
    snprintf(yaml_empty, sizeof(yaml_empty), "auth: {bearer_token_file: %s}\n", empty);
    const struct {
        const struct pg_component_ops *ops;
        const char *id;
        const char *yaml;
        enum pg_err rc;
        const char *diag; /* NULL: none expected */
    } cases[] = {
        {&pg_extension_health_check, "health_check", "endpoint: 127.0.0.1:0\n", PG_ERR_OK, NULL},
        {&pg_extension_health_check, "health_check", yaml_ok, PG_ERR_OK, NULL},
        {&pg_extension_pprof, "pprof", yaml_ok, PG_ERR_OK, NULL},
        {&pg_extension_telemetry_metrics, "telemetry_metrics", yaml_ok, PG_ERR_OK, NULL},
        {&pg_extension_health_check, "health_check", "endpoint: nowhere\n", PG_ERR_CONFIG,
         "extensions::health_check: endpoint \"nowhere\" is not host:port (e.g. localhost:13133)"},
        {&pg_extension_pprof, "pprof", "endpoint: x:99999\n", PG_ERR_CONFIG,
         "is not host:port (e.g. localhost:1777)"},
        {&pg_extension_telemetry_metrics, "telemetry_metrics", "endpoint: x\n", PG_ERR_CONFIG,
         "service::telemetry::metrics: address \"x\" is not host:port (e.g. localhost:8888)"},
        {&pg_extension_health_check, "health_check", "path: healthz\n", PG_ERR_CONFIG,
         "path must start with /"},
        {&pg_extension_pprof, "pprof", "auth: {}\n", PG_ERR_CONFIG,
         "auth: set exactly one of bearer_token_file and basic_auth_file"},
        {&pg_extension_pprof, "pprof", "auth: {bearer_token_file: a, basic_auth_file: b}\n",
         PG_ERR_CONFIG, "exactly one"},
        {&pg_extension_pprof, "pprof", "auth: {bearer_token_file: /nonexistent/pg-token}\n",
         PG_ERR_CONFIG, "extensions::pprof: auth: cannot open /nonexistent/pg-token"},
        {&pg_extension_health_check, "health_check", yaml_empty, PG_ERR_CONFIG, "is empty"},
        {&pg_extension_pprof, "pprof", "auth: {token: x}\n", PG_ERR_CONFIG, "token"},
        {&pg_extension_telemetry_metrics, "telemetry_metrics", "auth: [1]\n", PG_ERR_CONFIG,
         "auth"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fixture f;
        fixture_make(&f, cases[i].ops, cases[i].id, cases[i].yaml);
        CHECK_INT(f.rc, cases[i].rc);
        if (cases[i].diag == NULL) {
            CHECK_INT(f.diag.n, 0);
            CHECK(f.state != NULL);
        } else {
            CHECK(f.state == NULL);
            CHECK(pg_test_diag_has(&f.diag, cases[i].diag));
            if (!pg_test_diag_has(&f.diag, cases[i].diag)) {
                fprintf(stderr, "  case %zu: %s\n", i, f.diag.n ? f.diag.msgs[0] : "(no diag)");
            }
        }
        fixture_free(&f);
    }
}

struct reply {
    int code;
    char challenge[128];
    char body[512];
    struct event_base *base;
};

static void on_reply(struct evhttp_request *req, void *arg)
{
    struct reply *r = arg;
    r->code = req ? evhttp_request_get_response_code(req) : -1;
    if (req != NULL) {
        const char *c =
            evhttp_find_header(evhttp_request_get_input_headers(req), "WWW-Authenticate");
        snprintf(r->challenge, sizeof(r->challenge), "%s", c ? c : "");
        struct evbuffer *b = evhttp_request_get_input_buffer(req);
        size_t n = evbuffer_get_length(b);
        if (n >= sizeof(r->body)) {
            n = sizeof(r->body) - 1;
        }
        evbuffer_remove(b, r->body, n);
        r->body[n] = '\0';
    }
    event_base_loopbreak(r->base);
}

static unsigned bound_port(void *state)
{
    const struct pg_admin_http *h = state;
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    if (h->httpd == NULL ||
        getsockname(pg_httpd_fd(h->httpd), (struct sockaddr *)&sa, &sl) != 0) {
        return 0;
    }
    return ntohs(sa.sin_port);
}

/* GET @path with @authz (NULL: no header) on the fixture's loop. */
static int get(struct fixture *f, const char *path, const char *authz, struct reply *r)
{
    memset(r, 0, sizeof(*r));
    r->code = -1;
    r->base = f->base;
    struct evhttp_connection *c =
        evhttp_connection_base_new(f->base, NULL, "127.0.0.1", (ev_uint16_t)bound_port(f->state));
    struct evhttp_request *req = evhttp_request_new(on_reply, r);
    struct evkeyvalq *oh = evhttp_request_get_output_headers(req);
    evhttp_add_header(oh, "Host", "127.0.0.1");
    if (authz != NULL) {
        evhttp_add_header(oh, "Authorization", authz);
    }
    struct timeval tmo = {5, 0};
    evhttp_connection_set_timeout_tv(c, &tmo);
    if (evhttp_make_request(c, req, EVHTTP_REQ_GET, path) == 0) {
        event_base_dispatch(f->base);
    }
    evhttp_connection_free(c);
    return r->code;
}

PG_TEST(test_gate_each_extension)
{
    const char *tok = tmpfile_with("gate.token", "right-token\n");
    char yaml[256];
    snprintf(yaml, sizeof(yaml), "endpoint: 127.0.0.1:0\nauth: {bearer_token_file: %s}\n", tok);
    static const struct {
        const struct pg_component_ops *ops;
        const char *id;
        const char *path;
    } exts[] = {
        {&pg_extension_pprof, "pprof", "/debug/pprof/"},
        {&pg_extension_health_check, "health_check", "/"},
        {&pg_extension_telemetry_metrics, "telemetry_metrics", "/metrics"},
    };
    static const struct {
        const char *authz;
        int code;
        const char *why;
    } reqs[] = {
        {NULL, 401, "unauthorized: missing Authorization header\n"},
        {"Bearer wrong-token", 401, "unauthorized: invalid bearer token\n"},
        {"Basic cmlnaHQtdG9rZW4=", 401, "unauthorized: expected an Authorization: Bearer"},
        {"Bearer right-token", 0, NULL}, /* 0: whatever the route answers, never 401 */
    };
    FILE *log = tmpfile();
    pg_log_set_stream(log);
    for (size_t e = 0; e < sizeof(exts) / sizeof(exts[0]); e++) {
        struct fixture f;
        struct pg_status st = {0};
        fixture_make(&f, exts[e].ops, exts[e].id, yaml);
        CHECK_INT(f.rc, PG_ERR_OK);
        if (f.rc != PG_ERR_OK || exts[e].ops->start(f.state, &st) != PG_ERR_OK) {
            CHECK(false);
            fixture_free(&f);
            continue;
        }
        for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
            struct reply r;
            int code = get(&f, exts[e].path, reqs[i].authz, &r);
            if (reqs[i].code == 401) {
                CHECK_INT(code, 401);
                CHECK_STR(r.challenge, "Bearer realm=\"pprofgate\"");
                CHECK(strncmp(r.body, reqs[i].why, strlen(reqs[i].why)) == 0);
                /* Refused before routing: an unknown path is 401 too. */
                CHECK_INT(get(&f, "/nope", reqs[i].authz, &r), 401);
            } else {
                /* health_check is 503 here: no service, so not "ready". */
                CHECK_INT(code, e == 1 ? 503 : 200);
                CHECK_STR(r.challenge, "");
                CHECK_INT(get(&f, "/nope", reqs[i].authz, &r), 404);
                if (e == 2) {
                    /* /targets renders on the render thread too (no scraper: empty). */
                    CHECK_INT(get(&f, "/targets", reqs[i].authz, &r), 200);
                    CHECK_STR(r.body, "{\"activeTargets\":[\n  ],\"droppedTargets\":0}\n");
                }
            }
        }
        fixture_free(&f);
    }
    pg_log_set_stream(NULL);
    fclose(log);
}

/* A spec of our own: counts what reaches the routes. */
static int g_routed;

static void count_route(struct pg_httpd_req *req, void *state)
{
    g_routed++;
    pg_admin_reply_text(state, req, 200, "routed");
}

static const struct pg_admin_spec test_spec = {
    .what = "test",
    .metric_label = "test",
    .config_path = "test",
    .endpoint_word = "endpoint",
    .endpoint_example = "localhost:1",
    .max_body = 1024,
    .on_request = count_route,
};

static const struct pg_field test_fields[] = {
    PG_ADMIN_HTTP_FIELDS("127.0.0.1:0", "test"),
    PG_FIELD_END,
};

static enum pg_err test_create(const struct pg_component_ctx *ctx, void **state)
{
    return pg_admin_ext_create(ctx, &test_spec, test_fields, sizeof(struct pg_admin_http), state);
}

static const struct pg_component_ops test_ops = {
    .type = "test",
    .kind = PG_KIND_EXTENSION,
    .fields = test_fields,
    .create = test_create,
    .start = pg_admin_ext_start,
    .shutdown = pg_admin_ext_shutdown,
    .destroy = pg_admin_ext_destroy,
};

PG_TEST(test_gate_routes_and_rotation)
{
    const char *htpasswd = tmpfile_with("htpasswd", "ops:pw1\n");
    char yaml[256];
    snprintf(yaml, sizeof(yaml), "auth: {basic_auth_file: %s, realm: admin}\n", htpasswd);
    FILE *log = tmpfile();
    pg_log_set_stream(log);

    /* Without auth: every request is routed. */
    struct fixture f;
    struct pg_status st = {0};
    struct reply r;
    g_routed = 0;
    fixture_make(&f, &test_ops, "test", "{}\n");
    PG_REQUIRE(f.rc == PG_ERR_OK);
    PG_REQUIRE(test_ops.start(f.state, &st) == PG_ERR_OK);
    CHECK_INT(get(&f, "/", NULL, &r), 200);
    CHECK_INT(get(&f, "/x", "Bearer whatever", &r), 200);
    CHECK_INT(g_routed, 2);
    fixture_free(&f);

    /* With basic auth: only the right user:password is routed. */
    g_routed = 0;
    fixture_make(&f, &test_ops, "test", yaml);
    PG_REQUIRE(f.rc == PG_ERR_OK);
    PG_REQUIRE(test_ops.start(f.state, &st) == PG_ERR_OK);
    CHECK_INT(get(&f, "/", NULL, &r), 401);
    CHECK_STR(r.challenge, "Basic realm=\"admin\", charset=\"UTF-8\"");
    CHECK_INT(get(&f, "/", "Basic b3BzOndyb25n", &r), 401); /* ops:wrong */
    CHECK_INT(get(&f, "/", "Basic !!!!", &r), 401);
    CHECK_INT(g_routed, 0);
    CHECK_INT(get(&f, "/", "Basic b3BzOnB3MQ==", &r), 200); /* ops:pw1 */
    CHECK_STR(r.body, "routed\n");
    CHECK_INT(g_routed, 1);

    /* Rotation: the file is re-read (at most once a second) on a request. */
    sleep(1);
    tmpfile_with("htpasswd", "ops:pw2\n");
    usleep(100 * 1000);
    CHECK_INT(get(&f, "/", "Basic b3BzOnB3Mg==", &r), 200); /* ops:pw2 */
    CHECK_INT(get(&f, "/", "Basic b3BzOnB3MQ==", &r), 401); /* ops:pw1, no longer */
    CHECK_INT(g_routed, 2);

    /* shutdown closes the listener; a second shutdown is harmless. */
    test_ops.shutdown(f.state);
    CHECK(((struct pg_admin_http *)f.state)->httpd == NULL);
    fixture_free(&f);
    pg_log_set_stream(NULL);
    fclose(log);

    /* The last case: remove the temp files. */
    static const char *const names[] = {"token", "empty", "gate.token", "htpasswd"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char p[128];
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

PG_TEST_MAIN(PG_CASE(test_split_endpoint), PG_CASE(test_config_checks),
             PG_CASE(test_gate_each_extension), PG_CASE(test_gate_routes_and_rotation))
