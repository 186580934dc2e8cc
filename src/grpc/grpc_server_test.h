/* SPDX-License-Identifier: Apache-2.0
 * A seam for tests and the fuzz target: a connection the server did not
 * accept (one end of a bufferevent pair), served like an accepted one but
 * outside the connection caps. A server made with fd -1 accepts nothing. */
#ifndef PG_GRPC_GRPC_SERVER_TEST_H
#define PG_GRPC_GRPC_SERVER_TEST_H

#include <stdbool.h>

struct bufferevent;
struct pg_grpc_server;

/* Serves @bev (owned from here, also on failure) as a plain-TCP
 * connection from @peer. False on OOM. */
bool pg_grpc_server_adopt(struct pg_grpc_server *s, struct bufferevent *bev, const char *peer);

#endif
