/*
** harness/engine/model/pilot.c - the team or one thread for a decoding step
** (or a portable training step), by timing both now and then (see pilot.h).
*/
#include "harness/engine/model/pilot.h"

#include <string.h>

static int forced = -1;
static FILE *trace;

void lx_pilot_force(int mode)
{
    forced = mode;
}

int lx_pilot_forced(void)
{
    return forced;
}

void lx_pilot_trace(FILE *f)
{
    trace = f;
}

int lx_pilot_parse(const char *s, int *mode)
{
    static const char *const names[] = {"one", "team", "pilot"};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0)
            return *mode = i < 2 ? i : -1, 0;
    return -1;
}

void lx_pilot_init(struct lx_pilot *p, int solo, int on)
{
    memset(p, 0, sizeof *p);
    p->on = on;
    p->solo = solo != 0;
    p->next = LX_PILOT_FIRST;
    p->every = LX_PILOT_EVERY;
}

/* Probe steps 1 and 4 run in the mode held (A), 2 and 3 in the other (B). */
static int probing_other(const struct lx_pilot *p)
{
    return p->phase == 2 || p->phase == 3;
}

int lx_pilot_solo(const struct lx_pilot *p)
{
    return probing_other(p) ? !p->solo : p->solo;
}

/* A step in the mode held: the last LX_PILOT_HELD are kept. */
static void held(struct lx_pilot *p, double seconds)
{
    p->held[p->n_held++ % LX_PILOT_HELD] = seconds;
}

/* A probe after a switch comes LX_PILOT_EVERY steps later, so it meets no step from before it. */
_Static_assert(LX_PILOT_EVERY >= LX_PILOT_HELD, "a probe's median is of the mode held");

/* The median of the held steps kept (at least two: the first probe starts after LX_PILOT_FIRST). */
static double held_median(const struct lx_pilot *p)
{
    int n = p->n_held < LX_PILOT_HELD ? (int)p->n_held : LX_PILOT_HELD;
    double v[LX_PILOT_HELD];
    for (int i = 0; i < n; i++) {   /* insertion sort of at most LX_PILOT_HELD values */
        int j = i;
        for (; j > 0 && v[j - 1] > p->held[i]; j--)
            v[j] = v[j - 1];
        v[j] = p->held[i];
    }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void lx_pilot_told(struct lx_pilot *p, double seconds)
{
    if (trace)
        fprintf(trace, "%c %.6f\n", lx_pilot_solo(p) ? 'S' : 'T', seconds);
    p->steps[lx_pilot_solo(p)]++;
    long told = p->steps[0] + p->steps[1];
    if (!p->on)
        return;
    if (probing_other(p))
        p->b[p->phase - 2] = seconds;
    else
        held(p, seconds);
    if (p->phase == 0) {
        if (told >= p->next)
            p->phase = 1;   /* the next step starts a probe */
        return;
    }
    if (p->phase++ < 4)
        return;
    p->phase = 0;
    p->probes++;
    if (p->b[0] + p->b[1] < LX_PILOT_GAIN * 2.0 * held_median(p)) {
        p->solo = !p->solo;
        p->switches++;
        p->every = LX_PILOT_EVERY;
    } else {
        long g = LX_PILOT_GROWTH * p->every;
        p->every = g < LX_PILOT_EVERY_MAX ? g : LX_PILOT_EVERY_MAX;
    }
    p->next = told + p->every;
}
