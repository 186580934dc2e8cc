/* SPDX-License-Identifier: Apache-2.0
 * The `self:` source of the pprof receiver: every collection_interval it
 * takes pprofgate's own heap profile from the embedded sampler, translates it
 * like a pushed pprof body and hands it to the receiver's pipelines with
 * service.name=pprofgate and profiler.type=heap. Runs on the main loop. */
#ifndef PG_RECEIVER_PPROF_SELF_H
#define PG_RECEIVER_PPROF_SELF_H

#include <stdint.h>

#include "pipeline/component.h"
#include "pprof/translate.h"

struct pg_pprof_self;

/* @host and @next are borrowed and must outlive the source; @opts is copied
 * (NULL = pg_translate_opts_default). @interval_ns > 0. NULL on OOM.
 * No timer runs until pg_pprof_self_start(). */
struct pg_pprof_self *pg_pprof_self_create(struct pg_host *host, struct pg_consumer *next,
                                           int64_t interval_ns,
                                           const struct pg_translate_opts *opts);
/* Arms the periodic timer on host->base (first collection after one interval). */
enum pg_err pg_pprof_self_start(struct pg_pprof_self *s, struct pg_status *st);
/* Collects and pushes one profile now (the timer calls this). OK when the
 * sampler is off (nothing to send; logged once). */
enum pg_err pg_pprof_self_collect(struct pg_pprof_self *s, struct pg_status *st);
/* Stops the timer (idempotent); call from the receiver's shutdown. */
void pg_pprof_self_stop(struct pg_pprof_self *s);
/* Stops and frees. NULL ok. */
void pg_pprof_self_destroy(struct pg_pprof_self *s);

#endif
