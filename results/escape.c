/*
** results/escape.c - every stored string that reaches a page or a table goes
** through one of these, one function per context (docs/results.md#escaping):
** HTML text and double-quoted attribute values (the report), Markdown table
** cells and headings, LaTeX, and RFC 4180 CSV fields. gnuplot's string
** literals are escaped in results/plot.c, the only file that writes them.
**
** Stored strings are whatever a store holds: a shard merged from elsewhere
** may carry quotes, markup, newlines or control bytes in any name. None of
** them may end the context it is written into.
*/
#include <ctype.h>
#include <string.h>

#include "results/views.h"

void lx_esc_html(struct lx_buf *b, const char *s)
{
    static const char *const ent[] = {['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;",
                                      ['\''] = "&#39;"};
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < sizeof ent / sizeof *ent && ent[*p])
            lx_buf_puts(b, ent[*p]);
        else if ((*p < 0x20 && !strchr("\t\n\r", *p)) || *p == 0x7f)
            lx_buf_puts(b, "\xef\xbf\xbd");     /* U+FFFD: the page holds no control byte */
        else
            lx_buf_printf(b, "%c", *p);
    }
}

/* An underscore that could open or close emphasis: at a word's edge
** (beta_fast inside a word cannot, and stays as written). */
static int md_edge_underscore(const unsigned char *s, const unsigned char *p)
{
    return *p == '_' && (p == s || !isalnum(p[-1]) || !isalnum(p[1]));
}

/* GFM's autolinks: the ':' of "://" and the '.' of a leading "www." */
static int md_autolink(const unsigned char *s, const unsigned char *p)
{
    return (*p == ':' && p[1] == '/' && p[2] == '/') ||
           (*p == '.' && p - s >= 3 && strncmp((const char *)p - 3, "www", 3) == 0 &&
            (p - s == 3 || !isalnum(p[-4])));
}

/* `$` too: GitHub and Jupyter render $...$ and $$...$$ as math (a label "$x$" would lose its dollars and
** turn italic), and read \$ as a dollar, as CommonMark does. */
void lx_esc_md(struct lx_buf *b, const char *s)
{
    const unsigned char *s0 = (const unsigned char *)s;
    for (const unsigned char *p = s0; *p; p++) {
        if (*p == '&')
            lx_buf_puts(b, "&amp;");
        else if (*p == '<')
            lx_buf_puts(b, "&lt;");
        else if (*p == '>')
            lx_buf_puts(b, "&gt;");
        else if (strchr("\\|`*~$", *p) || (*p == '(' && p > s0 && p[-1] == ']') || md_edge_underscore(s0, p) ||
                 md_autolink(s0, p))
            lx_buf_printf(b, "\\%c", *p);     /* no cell bar, code span, emphasis, strikethrough, math or link */
        else if (*p < 0x20 || *p == 0x7f)
            lx_buf_puts(b, " ");                /* one line: a table row, a heading */
        else
            lx_buf_printf(b, "%c", *p);
    }
}

void lx_esc_latex(struct lx_buf *b, const char *s)
{
    /* After a row's \\ (or \midrule) a leading [ would be read as an optional argument and a leading *
    ** as \\*; both look past blanks, and a control byte is written as one. */
    size_t blank = 0;
    while (s[blank] && ((unsigned char)s[blank] <= 0x20 || s[blank] == 0x7f))
        blank++;
    if (s[blank] == '[' || s[blank] == '*')
        lx_buf_puts(b, "{}");
    static const char *const cmd[] = {['\\'] = "\\textbackslash{}", ['^'] = "\\textasciicircum{}",
                                      ['~'] = "\\textasciitilde{}", ['<'] = "\\textless{}",
                                      ['>'] = "\\textgreater{}", ['|'] = "\\textbar{}"};
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (strchr("_%&#${}", *p))
            lx_buf_printf(b, "\\%c", *p);
        else if (*p < sizeof cmd / sizeof *cmd && cmd[*p])
            lx_buf_puts(b, cmd[*p]);
        else if (*p < 0x20 || *p == 0x7f)
            lx_buf_puts(b, " ");                /* no blank line (a paragraph) inside a tabular */
        else
            lx_buf_printf(b, "%c", *p);
    }
}

void lx_esc_csv(struct lx_buf *b, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        lx_buf_puts(b, s);
        return;
    }
    lx_buf_puts(b, "\"");
    for (; *s; s++)
        lx_buf_printf(b, *s == '"' ? "\"\"" : "%c", *s);
    lx_buf_puts(b, "\"");
}
