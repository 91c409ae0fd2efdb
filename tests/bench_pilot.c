/*
** tests/bench_pilot.c - `lenx-bench pilotreplay DIR`: the pilot's rule
** (harness/engine/model/pilot.c) replayed on traces of decoding steps run in
** one mode (docs/PERFORMANCE.md, "A probe's yardstick").
**
** DIR holds LOAD-team-N.txt and LOAD-one-N.txt (LOAD quiet or spin), each
** what LENX_PILOT_TRACE wrote for one `lenx generate` with LENX_TEAM=team or
** one (scripts/bench_pilot.sh --replay makes them). Each team trace is paired with
** each one-thread trace; a pilot started on the team runs their steps, a step
** in a mode taking that trace's time at that step, and its total is set
** against the better fixed mode of the pairing (both traces cut to the
** shorter). Prints, per load, the pairings' median and worst ratio, the
** pairings that never left the team and the totals' medians.
*/
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/model/pilot.h"

#define MAX_TRACES 64

struct trace {
    double *s;
    long n;
};

static int read_trace(const char *path, struct trace *t)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return fprintf(stderr, "pilotreplay: cannot read %s\n", path), -1;
    long cap = 256;
    t->s = malloc(sizeof(double) * (size_t)cap), t->n = 0;
    char mode;
    double sec;
    while (fscanf(f, " %c %lf", &mode, &sec) == 2) {
        if (t->n == cap)
            t->s = realloc(t->s, sizeof(double) * (size_t)(cap *= 2));
        t->s[t->n++] = sec;
    }
    fclose(f);
    return t->n > 0 ? 0 : (fprintf(stderr, "pilotreplay: no step in %s\n", path), -1);
}

static int read_all(const char *dir, const char *load, const char *mode, struct trace *t)
{
    char pat[4096];
    glob_t g;
    snprintf(pat, sizeof pat, "%s/%s-%s-*.txt", dir, load, mode);
    if (glob(pat, 0, NULL, &g) != 0)
        return 0;
    int n = 0;
    for (size_t i = 0; i < g.gl_pathc && n < MAX_TRACES; i++)
        if (read_trace(g.gl_pathv[i], &t[n]) == 0)
            n++;
    globfree(&g);
    return n;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double sum(const double *v, long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += v[i];
    return s;
}

int lx_bench_pilot_replay(const char *dir)
{
    static const char *const loads[] = {"quiet", "spin"};
    printf("| load | pairings | pilot / better fixed, median | worst | never left the team | team s | one s | pilot s |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int l = 0; l < 2; l++) {
        struct trace team[MAX_TRACES], one[MAX_TRACES];
        int nt = read_all(dir, loads[l], "team", team), no = read_all(dir, loads[l], "one", one);
        int np = 0, stayed = 0;
        double ratio[MAX_TRACES * MAX_TRACES], tt[MAX_TRACES * MAX_TRACES], to[MAX_TRACES * MAX_TRACES],
            tp[MAX_TRACES * MAX_TRACES];
        for (int i = 0; i < nt; i++)
            for (int j = 0; j < no; j++, np++) {
                long n = team[i].n < one[j].n ? team[i].n : one[j].n;
                struct lx_pilot p;
                lx_pilot_init(&p, 0, 1);
                double total = 0;
                for (long k = 0; k < n; k++) {
                    double s = lx_pilot_solo(&p) ? one[j].s[k] : team[i].s[k];
                    total += s;
                    lx_pilot_told(&p, s);
                }
                tt[np] = sum(team[i].s, n), to[np] = sum(one[j].s, n), tp[np] = total;
                ratio[np] = total / (tt[np] < to[np] ? tt[np] : to[np]);
                stayed += p.switches == 0;
            }
        if (np == 0) {
            printf("| %s | 0 (no %s-team-*.txt and %s-one-*.txt in %s) | | | | | | |\n", loads[l], loads[l], loads[l],
                   dir);
            continue;
        }
        double med = median(ratio, np), worst = ratio[np - 1];  /* sorted by median() */
        printf("| %s | %d | %.3f | %.3f | %d | %.2f | %.2f | %.2f |\n", loads[l], np, med, worst, stayed,
               median(tt, np), median(to, np), median(tp, np));
        for (int i = 0; i < nt; i++)
            free(team[i].s);
        for (int j = 0; j < no; j++)
            free(one[j].s);
    }
    return 0;
}
