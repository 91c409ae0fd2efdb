/*
** harness/core/mapguard.c - the SIGBUS guard of mapped weights (mapguard.h).
** The table is written by the loading thread only and read by the handler;
** the handler uses async-signal-safe calls only (write, _exit).
*/
#define _POSIX_C_SOURCE 200809L
#include "harness/core/mapguard.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct range {
    uintptr_t lo, hi;
    char path[512], tensor[128];
    struct stat st;     /* the file at registration */
};

static struct range *ranges;
static volatile size_t n_ranges;
static size_t cap;

static void put(const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t k = write(2, s, n);
        if (k <= 0)
            return;
        s += k, n -= (size_t)k;
    }
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    uintptr_t a = (uintptr_t)si->si_addr;
    (void)uc;
    for (size_t i = 0; i < n_ranges; i++)
        if (a >= ranges[i].lo && a < ranges[i].hi) {
            put("lenx: error: ");
            put(ranges[i].path);
            put(": tensor '");
            put(ranges[i].tensor);
            put("' can no longer be read: the file shrank or was replaced while lenx used it mapped\n"
                "  hint: nothing was stored for the cell in flight; run again once nothing writes the file "
                "(copy a model before rewriting it)\n");
            _exit(3);
        }
    signal(sig, SIG_DFL);   /* not ours: the default action */
    raise(sig);
}

static void install(void)
{
    static int done;
    struct sigaction sa;
    if (done)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    done = 1;
}

void lx_mapguard_add(const void *p, size_t n, const char *path, const char *tensor)
{
    install();
    if (n_ranges == cap) {  /* the handler may run between the two stores: it reads the old, complete table */
        size_t ncap = cap ? 2 * cap : 64;
        struct range *r = lx_xcalloc(ncap, sizeof *r);
        if (n_ranges)
            memcpy(r, ranges, n_ranges * sizeof *r);
        struct range *old = ranges;
        ranges = r;
        cap = ncap;
        free(old);
    }
    struct range *r = &ranges[n_ranges];
    r->lo = (uintptr_t)p;
    r->hi = (uintptr_t)p + n;
    snprintf(r->path, sizeof r->path, "%s", path);
    snprintf(r->tensor, sizeof r->tensor, "%s", tensor);
    if (n_ranges && strcmp(ranges[n_ranges - 1].path, r->path) == 0)
        r->st = ranges[n_ranges - 1].st;    /* a file's tensors come in a row: stat it once */
    else if (stat(path, &r->st) != 0)
        memset(&r->st, 0, sizeof r->st);
    n_ranges = n_ranges + 1;
}

void lx_mapguard_remove(const void *p, size_t n)
{
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    size_t k = 0;
    for (size_t i = 0; i < n_ranges; i++)
        if (!(ranges[i].lo >= lo && ranges[i].hi <= hi))
            ranges[k++] = ranges[i];
    n_ranges = k;
}

int lx_mapguard_check(struct lx_error *err)
{
    for (size_t i = 0; i < n_ranges; i++) {
        struct stat now;
        const struct range *r = &ranges[i];
        if (i && strcmp(r->path, ranges[i - 1].path) == 0)
            continue;
        if (stat(r->path, &now) != 0 || now.st_ino != r->st.st_ino || now.st_size != r->st.st_size ||
            now.st_mtim.tv_sec != r->st.st_mtim.tv_sec || now.st_mtim.tv_nsec != r->st.st_mtim.tv_nsec)
            return lx_err(err, LX_EIO, "%s changed while lenx used its weights mapped (%s); what was computed from "
                          "it is not stored\n  hint: run again once nothing writes the file (copy a model before "
                          "rewriting it)", r->path, stat(r->path, &now) != 0 ? "it is gone" : "size, time or inode "
                          "differ");
    }
    return LX_OK;
}
