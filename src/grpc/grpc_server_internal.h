/* SPDX-License-Identifier: Apache-2.0
 * What the gRPC server's two files share: grpc_server.c owns accept, the
 * connections, their timers and closing; grpc_session.c what a client
 * sends (nghttp2's callbacks: calls from HEADERS to the answer, SETTINGS,
 * the PING policy). Calls go one way, server -> session: the session asks
 * for a flush only by activating the connection's defer_ev. Everything
 * here is the loop thread's, but the acceptor's shared counts (under their
 * mutex). */
#ifndef PG_GRPC_GRPC_SERVER_INTERNAL_H
#define PG_GRPC_GRPC_SERVER_INTERNAL_H

#include <nghttp2/nghttp2.h>

#include "codec/codec.h"
#include "core/arena.h"
#include "grpc/grpc_server.h"
#include "grpc/grpc_wire.h"
#include "h2/h2_session.h"
#include "http/acceptor.h"
#include "http/conn_limits.h"

struct pg_grpc_server {
    struct pg_acceptor acc;              /* the listening socket; caps shared by siblings */
    struct event_base *base;
    SSL_CTX *ssl_ctx;                    /* borrowed */
    struct pg_grpc_server_limits lim;    /* defaults filled in */
    struct pg_grpc_server_ops ops;
    void *arg;
    struct gconn *conns;
    size_t n_conns;                      /* this server's connections */
    size_t n_calls;                      /* between on_headers and on_done */
    nghttp2_option *opt;                 /* owned: flood limits, copied per session */
    nghttp2_session_callbacks *cbs;      /* owned: copied per session */
    char accept_enc[96];                 /* grpc-accept-encoding value */
    uint8_t *rbuf;                       /* owned: plain TCP reads land here, fed to nghttp2 at once */
    bool stopping;
};

struct gcall;

/* One connection: the bufferevent, its HTTP/2 session and timers. */
struct gconn {
    struct pg_grpc_server *srv;
    struct gconn *prev, *next;
    struct bufferevent *bev;  /* owned (and the fd) */
    /* Plain TCP reads and writes the socket itself (one recv() into the
     * server's rbuf, one writev() of the bufferevent's output per loop
     * pass, no epoll change per call); the bufferevent only writes what the
     * socket did not take. NULL (TLS, a test's pair): the bufferevent does all. */
    struct event *read_ev;
    int fd;                   /* the socket when read_ev, else -1 */
    struct pg_h2 h2;          /* the session; h2.ng NULL until the preface can flow */
    struct pg_peer_key key;
    bool counted;             /* in the shared caps */
    char peer_addr[64];
    unsigned peer_port;
    char peer[80];
    bool tls;
    bool got_settings;        /* the client's first SETTINGS arrived */
    bool goaway;              /* draining: the shutdown notice is queued, no new calls */
    bool final_goaway;        /* the GOAWAY naming the last stream is queued: close when drained */
    bool closing;             /* close once the output is written */
    bool age_fired;           /* max_connection_age passed: the grace runs */
    int close_event;          /* enum pg_grpc_server_event reported at close, -1 none */
    struct event *hs_ev, *ka_ev, *idle_ev, *age_ev, *defer_ev;
    struct event *goaway_ev;  /* the final GOAWAY if the drain PING is not answered */ /* defer_ev: flush after a reply made outside the pump */
    int64_t last_read_ns;     /* keepalive: any byte read */
    int64_t ka_seen_ns;       /* last_read_ns when the keepalive timer last looked */
    int64_t idle_since_ns;    /* 0 while calls are open */
    int64_t last_ping_ns;     /* the client's last PING, 0 none */
    unsigned ping_strikes;
    bool reset_ping_strikes;  /* we sent HEADERS or DATA since the last PING */
    struct gcall *calls;
    size_t n_streams;         /* calls open on this connection */
};

enum call_state {
    CALL_HEADERS = 0, /* header block arriving */
    CALL_READING,     /* the message arriving */
    CALL_HANDLER,     /* on_call ran; the answer is the handler's */
    CALL_ANSWERED,    /* answered: later DATA is discarded, late replies dropped */
};

/* One stream. pub first: the handler's pointer converts back. */
struct gcall {
    struct pg_grpc_call pub;
    struct gconn *conn;
    struct gcall *prev, *next;
    int32_t stream_id;
    enum call_state state;
    bool handler_knows;      /* on_headers ran: on_done is owed */
    bool req_ended;          /* the client's END_STREAM arrived */
    bool rst_after_answer;   /* answered before the client's END_STREAM */
    bool hdr_over;           /* header block past max_header_list_size */
    size_t hdr_bytes;
    struct pg_arena *arena;  /* owned: header strings, md, the decoded message */
    const char *method, *content_type, *encoding, *timeout;
    struct pg_grpc_md *md;
    size_t md_cap;
    const struct pg_codec *codec; /* grpc-encoding's row, NULL = identity */
    struct pg_grpc_reader reader; /* the message as it comes (owns its malloc'd buffer) */
    struct event *deadline_ev, *read_ev;
    /* The answer of an OK call: prefix + message (malloc'd), then trailers. */
    uint8_t *out;
    size_t out_len, out_sent;
    char t_status[12];
    char *t_message;         /* malloc'd, percent-coded, NULL none */
    char *t_details;         /* malloc'd base64, NULL none */
};

/* grpc_session.c: installs the session callbacks into @cbs. */
void grpc_session_callbacks(nghttp2_session_callbacks *cbs);
/* The PING payload that follows a shutdown notice: its ACK (one round
 * trip) means every stream the client opened before the notice arrived. */
#define GRPC_DRAIN_PING "pgdrain!"
/* grpc_session.c: queues the GOAWAY with the last stream processed (after
 * the shutdown notice's round trip, or its timeout). */
void grpc_session_final_goaway(struct gconn *c);
/* grpc_session.c: ends @call without an answer (connection gone): on_done
 * if owed, then freed. */
void grpc_call_end(struct gcall *call);

#endif
