/*
** harness/engine/model/pilot.h - whether a decoding step (or a training step
** in portable numerics) runs on the OpenMP team or on one thread, chosen by
** timing both now and then.
**
** A step is about a hundred short parallel regions (a few per layer), and
** every region's end waits for the slowest thread. On a quiet machine the
** team reads the weights faster than one thread (1B shape as Q4_K_M on this
** project's 2-core AMD EPYC: 27-35 against 48-50 ms a step); when another
** process holds one of the cores, each end waits for the descheduled thread
** to be scheduled again and the team runs 2-3x slower than one thread alone
** (140-146 against 51-57 ms). Neither choice is right everywhere and the
** load changes while a program runs, so a pilot times both: now and then a
** probe runs four steps, A B B A (A the mode it holds, B the other), and B
** is taken when its two steps took less than LX_PILOT_GAIN of twice A's
** typical step, the median of the last LX_PILOT_HELD steps run in mode A
** (the probe's two among them). One step's time says little: on a quiet
** machine a page fault or another process waking for a moment makes a step
** slow, and a move on it would cost LX_PILOT_EVERY steps on one thread;
** beside a busy process the team's steps vary widely as that process is
** scheduled, and one fast step would keep the team until the next probe. A
** median of eight moves little with one of them. A probe that keeps the
** mode makes the gap to the next one LX_PILOT_GROWTH times longer (up to
** LX_PILOT_EVERY_MAX); a switch starts again from LX_PILOT_EVERY. A probe
** costs about a step where the modes differ by 1.7x (a quiet machine), so
** 127 steps pay two (about 2 %) and a long generation one in 512 steps.
**
** The team changes no value: in a decoding step each output of a product is
** one thread's sum and each key/value head's attention one thread's
** (decoding.c), and a portable training step is the same bits on any thread
** count (train.c), so the pilot moves time, never a bit.
*/
#ifndef LX_PILOT_H
#define LX_PILOT_H

#include <stdio.h>

#define LX_PILOT_FIRST 4        /* steps before the first probe: a short answer never probes */
#define LX_PILOT_EVERY 16       /* steps between probes after a switch */
#define LX_PILOT_GROWTH 4       /* the gap's factor after a probe that keeps the mode */
#define LX_PILOT_EVERY_MAX 512  /* the most steps between probes */
#define LX_PILOT_GAIN 0.85      /* B replaces A when B's probe steps took under this share of A's (as above) */
#define LX_PILOT_HELD 8         /* the mode held's last steps, whose median stands for A in a probe */

struct lx_pilot {
    int on;         /* 0: every step in the mode it was started with */
    int solo;       /* the mode held: 1 one thread, 0 the team */
    int phase;      /* 0 outside a probe, else the probe's next step (1-4) */
    long next;      /* the step at which the next probe starts */
    long every;     /* steps from a probe's end to the next one's start */
    double held[LX_PILOT_HELD]; /* the last steps in the mode held (a ring) */
    long n_held;    /* steps put in it */
    double b[2];    /* a probe's two steps in the other mode */
    long steps[2];  /* steps run on the team [0] and on one thread [1] */
    long probes, switches;
};

/* Every pilot's mode forced for the process (benches and tests; LENX_TEAM,
** read once at start-up): 1 the team, 0 one thread, -1 (the default) piloted. */
void lx_pilot_force(int mode);
int lx_pilot_forced(void);
/* Every step any pilot is told of, forced or not, written to f as a line
** "T seconds" (the team) or "S seconds" (one thread); NULL (the default)
** writes none. LENX_PILOT_TRACE=FILE at start-up; lenx-bench pilotreplay
** replays such traces. */
void lx_pilot_trace(FILE *f);
/* 0 and *mode on "team", "one" or "pilot", -1 on anything else. */
int lx_pilot_parse(const char *s, int *mode);

/* A pilot starting in mode solo, probing when on (else it keeps solo). */
void lx_pilot_init(struct lx_pilot *p, int solo, int on);
/* Whether the next step runs on one thread (1) or the team (0). */
int lx_pilot_solo(const struct lx_pilot *p);
/* The step just run (in lx_pilot_solo's mode) took seconds. */
void lx_pilot_told(struct lx_pilot *p, double seconds);

#endif
