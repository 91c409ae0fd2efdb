/*
** harness/sweep/owner.c - who claims a sweep's cells, and the heartbeat that
** keeps the claims alive (see owner.h, docs/results.md "Several processes on
** one store").
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/sweep/owner.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void lx_owner_init(struct lx_owner *me)
{
    unsigned long long rnd = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&rnd, sizeof rnd, 1, f) != 1) {    /* no /dev/urandom: the clock in microseconds */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        rnd = ((unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000)
              ^ (unsigned long long)getpid() << 32;
    }
    if (f)
        fclose(f);
    if (gethostname(me->host, sizeof me->host - 1) != 0)
        strcpy(me->host, "unknown");
    me->host[sizeof me->host - 1] = '\0';
    me->pid = (long)getpid();
    snprintf(me->id, sizeof me->id, "%s:%ld:%016llx", me->host, me->pid, rnd);
}

static void *heartbeat_main(void *arg)
{
    struct lx_heartbeat *hb = arg;
    struct lx_store *s;
    struct lx_error err;
    if (lx_store_open(&s, hb->db, 0, &err) < 0)
        return NULL;    /* the pid check still covers this host */
    pthread_mutex_lock(&hb->mu);
    while (!hb->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += LX_HEARTBEAT_S;
        if (pthread_cond_timedwait(&hb->cv, &hb->mu, &until) != 0 && !hb->stop) {
            pthread_mutex_unlock(&hb->mu);
            lx_store_heartbeat(s, hb->owner, &err);
            pthread_mutex_lock(&hb->mu);
        }
    }
    pthread_mutex_unlock(&hb->mu);
    lx_store_close(s);
    return NULL;
}

void lx_heartbeat_start(struct lx_heartbeat *hb, const char *db, const char *owner)
{
    memset(hb, 0, sizeof *hb);
    hb->db = db;
    hb->owner = owner;
    pthread_mutex_init(&hb->mu, NULL);
    pthread_cond_init(&hb->cv, NULL);
    hb->running = pthread_create(&hb->thread, NULL, heartbeat_main, hb) == 0;
}

void lx_heartbeat_stop(struct lx_heartbeat *hb)
{
    pthread_mutex_lock(&hb->mu);
    hb->stop = 1;
    pthread_cond_signal(&hb->cv);
    pthread_mutex_unlock(&hb->mu);
    if (hb->running)
        pthread_join(hb->thread, NULL);
    pthread_mutex_destroy(&hb->mu);
    pthread_cond_destroy(&hb->cv);
}
