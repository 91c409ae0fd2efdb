/*
** tests/slurm_check.h - what a job script of `lenx slurm` must look like to
** sbatch and to the shell, checked independently of the writer
** (harness/scaleout/slurm.c), by tests/test_slurm.c and the fuzz target
** tests/fuzz/fuzz_slurm.c. Header-only (static functions), no Criterion.
**
** sbatch reads options from the "#SBATCH" lines before the script's first
** command. It splits each line into arguments as its own parser does (Slurm's
** src/sbatch/opt.c; the rules are restated here, not copied): whitespace
** separates arguments; '...' and "..." quote; a backslash escapes the next
** character, inside quotes too; an unquoted, unescaped '#' ends the line; an
** unmatched quote or an argument starting with ':' is fatal; an empty
** argument ends the line; a line holding "hetjob" or "packjob" (any case)
** starts a new heterogeneous component. To bash every line starting with '#'
** is a comment.
*/
#ifndef LX_TEST_SLURM_CHECK_H
#define LX_TEST_SLURM_CHECK_H

#include <ctype.h>
#include <stdio.h>
#include <string.h>

enum { SB_ARG = 8192 };

/* The next sbatch argument of *pp into arg (SB_ARG bytes): 1, 0 at the end
** of the line, -1 when sbatch would stop with a fatal error. */
static int sb_next(const char **pp, char *arg)
{
    const char *p = *pp;
    while (*p && isspace((unsigned char)*p))
        p++;
    if (*p == ':')
        return -1;
    size_t i = 0;
    int esc = 0;
    char q = 0;
    while (*p && (q || !isspace((unsigned char)*p))) {
        if (esc)
            esc = 0;
        else if (*p == '\\') {
            esc = 1, p++;
            continue;
        } else if (q && *p == q) {
            q = 0, p++;
            continue;
        } else if (!q && (*p == '"' || *p == '\'')) {
            q = *p++;
            continue;
        } else if (!q && *p == '#')
            break;
        if (i + 1 < SB_ARG)
            arg[i++] = *p;
        p++;
    }
    arg[i] = '\0';
    *pp = p;
    return q ? -1 : i > 0;
}

/* The option of one "#SBATCH" line (line[0, n), no newline) into arg: 0 when
** the line carries exactly one argument and it starts with "--", else -1 with
** why (n_why bytes) filled. */
static int sb_line_option(const char *line, size_t n, char *arg, char *why, size_t n_why)
{
    char text[SB_ARG], low[SB_ARG], extra[SB_ARG];
    if (n >= sizeof text)
        return snprintf(why, n_why, "an #SBATCH line of %zu bytes", n), -1;
    memcpy(text, line, n);
    text[n] = '\0';
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)tolower((unsigned char)text[i]);
    if (strstr(low, "hetjob") || strstr(low, "packjob"))
        return snprintf(why, n_why, "sbatch reads 'hetjob' in [%s] as a new job component", text), -1;
    const char *p = text + 7;
    if (!isspace((unsigned char)*p))
        return snprintf(why, n_why, "no space after #SBATCH in [%s]", text), -1;
    int rc = sb_next(&p, arg);
    if (rc != 1 || strncmp(arg, "--", 2) != 0)
        return snprintf(why, n_why, "[%s]: %s", text, rc < 0 ? "sbatch stops on it" : "no --option"), -1;
    rc = sb_next(&p, extra);
    if (rc != 0)
        return snprintf(why, n_why, "[%s]: %s", text, rc < 0 ? "sbatch stops on it" : "a second argument"), -1;
    return 0;
}

/* Call each(ctx, option) for every option of the script's header, the lines
** before its first command. 0 when every header line is "#!" (the first), a
** comment or an "#SBATCH" line with one option, and no "#SBATCH" line
** follows the header; else -1 with why filled. */
static int sb_header(const char *text, void (*each)(void *ctx, const char *option), void *ctx, char *why,
                     size_t n_why)
{
    static char arg[SB_ARG];
    int in_header = 1;
    for (const char *line = text; *line;) {
        size_t n = strcspn(line, "\n");
        int sbatch = n >= 7 && strncmp(line, "#SBATCH", 7) == 0;
        if (line != text || strncmp(line, "#!", 2) != 0) {
            if (in_header && line[0] != '#')
                in_header = 0;
            if (sbatch && !in_header)
                return snprintf(why, n_why, "an #SBATCH line after the first command: %.*s", (int)n, line), -1;
            if (sbatch && sb_line_option(line, n, arg, why, n_why) < 0)
                return -1;
            if (sbatch && each)
                each(ctx, arg);
        }
        line += n + (line[n] == '\n');
    }
    return 0;
}

static inline void sk_put(char *out, size_t cap, size_t *k, char c)
{
    if (*k + 1 < cap)
        out[(*k)++] = c;
}

/* The shell's view of a script, values aside: each single-quoted word (its
** '...' parts joined by \' ) becomes "Q", each comment "#", everything else
** (double-quoted text included) is kept. Written with any values that only ever land in single quotes or
** comments, a script has the skeleton it has with other values. */
static inline void sh_skeleton(const char *s, char *out, size_t cap)
{
    size_t k = 0;
    int word_start = 1;
    while (*s) {
        if (*s == '\'') {
            while (*s == '\'') {        /* 'part' (\''part')... */
                const char *end = strchr(s + 1, '\'');
                s = end ? end + 1 : s + strlen(s);
                if (s[0] == '\\' && s[1] == '\'')
                    s += 2;
            }
            sk_put(out, cap, &k, 'Q');
            word_start = 0;
        } else if (*s == '"') {          /* "...": kept as is (a value never lands there) */
            sk_put(out, cap, &k, *s++);
            while (*s && *s != '"') {
                if (*s == '\\' && s[1])
                    sk_put(out, cap, &k, *s++);
                sk_put(out, cap, &k, *s++);
            }
            if (*s)
                sk_put(out, cap, &k, *s++);
            word_start = 0;
        } else if (*s == '#' && word_start) {
            s += strcspn(s, "\n");
            sk_put(out, cap, &k, '#');
        } else if (*s == '\\' && s[1]) {
            sk_put(out, cap, &k, s[0]), sk_put(out, cap, &k, s[1]);
            s += 2;
            word_start = 0;
        } else {
            word_start = *s == ' ' || *s == '\t' || *s == '\n' || *s == ';' || *s == '(' || *s == '&' || *s == '|';
            sk_put(out, cap, &k, *s);
            s++;
        }
    }
    out[k] = '\0';
}

#endif
