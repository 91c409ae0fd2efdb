/*
** harness/sweep/owner.h - a process's identity on a store (the owner of its
** claims) and a thread that marks its claims alive (docs/results.md "Several
** processes on one store").
*/
#ifndef LX_SWEEP_OWNER_H
#define LX_SWEEP_OWNER_H

#include <pthread.h>

#include "results/store.h"

/* host:pid:random, unique even when a pid is reused on another host. */
void lx_owner_init(struct lx_owner *me);

/* A thread that marks our claims alive every LX_HEARTBEAT_S seconds over a
** connection of its own, so a long cell or training run is never taken for
** a dead one (LX_CLAIM_STALE_S). */
#define LX_HEARTBEAT_S 10

struct lx_heartbeat {
    pthread_t thread;           /* the thread, when running */
    pthread_mutex_t mu;         /* guards stop */
    pthread_cond_t cv;          /* signalled when stop is asked */
    int stop, running;          /* stop asked; the thread was started */
    const char *db, *owner;     /* the store's path; the owner id whose claims it marks */
};

/* Start the thread on the store at db for owner's claims; a thread that
** cannot start leaves the claims to the pid check (same host). */
void lx_heartbeat_start(struct lx_heartbeat *hb, const char *db, const char *owner);
/* Stop and join it. */
void lx_heartbeat_stop(struct lx_heartbeat *hb);

#endif
