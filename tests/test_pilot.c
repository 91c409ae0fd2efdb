/*
** tests/test_pilot.c - the pilot that runs a decoding step on the team or on
** one thread (harness/engine/model/pilot.h): its probes' schedule and
** choices worked out by hand on made-up step times (generation under a pilot:
** test_decode.c).
*/
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/model/pilot.h"

/* Step times in ms: the team's and one thread's, before step `at` (counted
** from 1) and from it on; step `spike`, if any, takes spike_ms whatever its mode. */
struct load {
    double team, solo;
    long at;
    double team2, solo2;
    long spike;
    double spike_ms;
};

/* n steps under the pilot, each taking the made-up time of its mode: modes[i]
** is 'T' (team) or 'S' (one thread) for step i + 1. */
static void fly(struct lx_pilot *p, const struct load *ld, long n, char *modes)
{
    for (long i = 0; i < n; i++) {
        int solo = lx_pilot_solo(p);
        int late = ld->at > 0 && i + 1 >= ld->at;
        double ms = solo ? (late ? ld->solo2 : ld->solo) : (late ? ld->team2 : ld->team);
        if (i + 1 == ld->spike)
            ms = ld->spike_ms;
        modes[i] = solo ? 'S' : 'T';
        lx_pilot_told(p, 1e-3 * ms);
    }
    modes[n] = '\0';
}

/* The modes written as runs, "5T 2S ...": 5 steps on the team, 2 on one thread, ... */
static void runs(char *out, const char *rle)
{
    char *end;
    for (long n; (n = strtol(rle, &end, 10)) > 0; rle = end + 1) {
        memset(out, *end, (size_t)n);
        out += n;
    }
    *out = '\0';
}

/* A pilot started on the team flown n (< 200) steps under ld, its modes checked against the runs want. */
static struct lx_pilot flown(struct load ld, long n, const char *want)
{
    struct lx_pilot p;
    char got[200], w[200];
    lx_pilot_init(&p, 0, 1);
    fly(&p, &ld, n, got);
    runs(w, want);
    cr_expect_str_eq(got, w);
    return p;
}

/* A quiet machine (team 30 ms, one thread 50): steps 1-4 on the team, then
** the probe A B B A on steps 5-8 (T S S T: 60 against 100 ms, kept), the
** next 64 steps after it (9-72) on the team, the next probe on steps 73-76,
** then 256 steps. */
Test(pilot, a_quiet_machine_keeps_the_team_and_probes_ever_less_often)
{
    struct lx_pilot p = flown((struct load){.team = 30, .solo = 50}, 120, "5T 2S 66T 2S 45T");
    cr_expect_eq(p.probes, 2);
    cr_expect_eq(p.switches, 0);
    cr_expect_eq(p.steps[0], 116);
    cr_expect_eq(p.steps[1], 4);
    cr_expect_eq(p.every, 256, "two kept probes make 16 four times longer twice, not %ld", p.every);
}

/* A loaded machine (team 140 ms, one thread 55): the first probe (steps 5-8,
** 110 against 280 ms) switches to one thread; the next comes 16 steps after
** it (25-28: S T T S, kept), then 64 after that (93-96). */
Test(pilot, a_loaded_machine_switches_to_one_thread_at_the_first_probe)
{
    struct lx_pilot p = flown((struct load){.team = 140, .solo = 55}, 99, "5T 2S 1T 17S 2T 66S 2T 4S");
    cr_expect_eq(p.switches, 1);
    cr_expect_eq(p.probes, 3);
    cr_expect(p.solo);
}

/* The load goes away at step 30 while the pilot runs on one thread: the
** probe on steps 25-28 still sees the load (kept), the one on 93-96 sees a
** quiet machine (S T T S: 100 against 60 ms) and takes the team back; the
** next probe is 16 steps later (113-116), on the team. */
Test(pilot, the_team_returns_when_the_load_goes)
{
    struct lx_pilot p = flown((struct load){.team = 140, .solo = 55, .at = 30, .team2 = 30, .solo2 = 50}, 120,
                              "5T 2S 1T 17S 2T 66S 2T 1S 17T 2S 5T");
    cr_expect_eq(p.switches, 2);
}

/* One slow step (300 ms on a quiet machine, a page fault's or another
** process's doing) at the probe's first, on the team (A), hardly moves the
** median of the team's steps (30, 30, 30, 30, 300, 30: 30 ms): twice it, 60,
** against B's 100 keeps the team. One at its second, on one thread (B), only
** makes B slower. Either way the probes come as on any quiet machine. */
Test(pilot, one_slow_step_does_not_move_the_pilot)
{
    for (long at = 5; at <= 6; at++) {
        struct lx_pilot p = flown((struct load){.team = 30, .solo = 50, .spike = at, .spike_ms = 300}, 80,
                                  "5T 2S 66T 2S 5T");
        cr_expect_eq(p.switches, 0, "a slow step %ld", at);
        cr_expect_eq(p.probes, 2);
    }
}

/* One fast step of the team's on a loaded machine (40 ms at the probe's
** first, the other process off its core for a moment) does not keep the team
** there: the median of its six steps is 140 ms, and one thread's 110 is
** under 0.85 of twice that. */
Test(pilot, one_fast_step_does_not_keep_the_team_under_load)
{
    struct lx_pilot p = flown((struct load){.team = 140, .solo = 55, .spike = 5, .spike_ms = 40}, 30,
                              "5T 2S 1T 17S 2T 3S");
    cr_expect_eq(p.switches, 1);
}

/* The median is of the last LX_PILOT_HELD steps: a load that comes at step
** 60 of a quiet run (the team's steps from 30 to 140 ms) is seen by the
** probe on steps 73-76, whose eight steps on the team are all loaded, though
** most of the run's were quiet. */
Test(pilot, the_median_is_of_the_last_steps)
{
    struct lx_pilot p = flown((struct load){.team = 30, .solo = 50, .at = 60, .team2 = 140, .solo2 = 55}, 80,
                              "5T 2S 66T 2S 1T 4S");
    cr_expect_eq(p.switches, 1);
}

/* B must take under LX_PILOT_GAIN (0.85) of twice A's typical step: at 0.86 of it the pilot keeps
** its mode, at 0.84 it switches. The gap between probes stops growing at
** LX_PILOT_EVERY_MAX. */
Test(pilot, a_switch_needs_a_clear_gain_and_the_gap_stops_growing)
{
    struct lx_pilot p;
    char got[4000];
    struct load even = {.team = 100, .solo = 86}, clear = {.team = 100, .solo = 84};
    lx_pilot_init(&p, 0, 1);
    fly(&p, &even, 8, got);
    cr_expect_eq(p.switches, 0, "one thread at 0.86 of the team's time is no clear gain");
    lx_pilot_init(&p, 0, 1);
    fly(&p, &clear, 8, got);
    cr_expect_eq(p.switches, 1, "one thread at 0.84 of the team's time is");
    lx_pilot_init(&p, 1, 1);
    struct load quiet = {.team = 30, .solo = 50};
    fly(&p, &quiet, 3000, got);
    cr_expect_eq(p.switches, 1);
    cr_expect_eq(p.every, LX_PILOT_EVERY_MAX);
    const char *last = strrchr(got, 'S');   /* the last probe's B steps */
    cr_expect(last && last - got >= 3000 - LX_PILOT_EVERY_MAX - 4, "a probe at least every %d steps",
              LX_PILOT_EVERY_MAX + 4);
}

/* A pilot that is off keeps its mode, however slow. */
Test(pilot, off_it_keeps_its_mode)
{
    struct lx_pilot p;
    struct load ld = {.team = 1000, .solo = 1};
    char got[100];
    lx_pilot_init(&p, 0, 0);
    fly(&p, &ld, 99, got);
    cr_expect_eq(strspn(got, "T"), 99);
    cr_expect_eq(p.probes, 0);
    cr_expect_eq(p.steps[0], 99);
}

/* LENX_TEAM's words, and nothing else. */
Test(pilot, the_forced_modes_are_named)
{
    int mode = 7;
    cr_expect(lx_pilot_parse("team", &mode) == 0 && mode == 1);
    cr_expect(lx_pilot_parse("one", &mode) == 0 && mode == 0);
    cr_expect(lx_pilot_parse("pilot", &mode) == 0 && mode == -1);
    mode = 7;
    cr_expect(lx_pilot_parse("Team", &mode) < 0 && lx_pilot_parse("", &mode) < 0 && lx_pilot_parse("2", &mode) < 0);
    cr_expect_eq(mode, 7, "a refused word leaves the mode alone");
}
