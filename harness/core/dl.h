/*
** harness/core/dl.h - a library opened at its first use (dlopen), not at
** lenx's start (docs/development.md#libraries-opened-at-first-use).
**
** Three of lenx's libraries serve one command or mode each and, linked, cost
** every start of lenx: libcurl and what it pulls in (the HTTP client of the
** server backends), libmicrohttpd (`lenx serve`) and oneDNN (`numerics:
** bf16`); `lenx --help` took 30 ms of CPU with them linked, 13 ms without.
** The one file that owns each library (docs/development.md#style) opens it
** here and resolves its functions into a table of its own, typed by the
** library's header.
*/
#ifndef LX_DL_H
#define LX_DL_H

#include "harness/core/lx.h"

/* A library and what it is for. Give soname, package and use; the rest
** starts zeroed and belongs to lx_dl_load. */
struct lx_dl {
    const char *soname;     /* "libcurl.so.4" */
    const char *package;    /* the Debian package that holds it: "libcurl4" */
    const char *use;        /* what needs it, for the message: "the HTTP client of a server backend" */
    void *handle;
    int tried, rc;
    struct lx_error err;    /* the first attempt's error, given to every later caller */
};

/* Open lib and run resolve(lib, err) once (thread-safe); LX_OK, or the first
** attempt's LX_EIO error (what needs the library, dlerror's reason, the
** package to install) on this and every later call. resolve takes each
** function with lx_dl_sym and returns LX_OK or the first missing one's error. */
int lx_dl_load(struct lx_dl *lib, int (*resolve)(struct lx_dl *lib, struct lx_error *err), struct lx_error *err);

/* The address of symbol name in the opened lib, or NULL with an LX_EIO error
** naming both (a library older than the header lenx was built with). */
void *lx_dl_sym(struct lx_dl *lib, const char *name, struct lx_error *err);

/* A library's table of functions from an X-macro list of their names, each
** without the prefix LX_DL_PREFIX the owning file defines (one library per
** file, so one prefix): a struct with a pointer per function, typed by the
** header's declaration, and the resolve function lx_dl_load takes.
**
**     #define LX_DL_PREFIX curl_
**     #define CURL_FNS(X) X(easy_init) X(easy_setopt) ...
**     static LX_DL_TABLE(CURL_FNS) cu;            // cu.easy_init() calls curl_easy_init
**     LX_DL_RESOLVE(resolve, cu, CURL_FNS)        // for lx_dl_load(&lib, resolve, err)
*/
#define LX_DL_CAT_(a, b) a##b
#define LX_DL_CAT(a, b) LX_DL_CAT_(a, b)
#define LX_DL_STR_(a) #a
#define LX_DL_STR(a) LX_DL_STR_(a)
#define LX_DL_FIELD(f) __typeof__(LX_DL_CAT(LX_DL_PREFIX, f)) *f;
#define LX_DL_TABLE(LIST) struct { LIST(LX_DL_FIELD) }
#define LX_DL_SYM(f) &&(lx_dl_t_->f = (__typeof__(lx_dl_t_->f))lx_dl_sym(lib, LX_DL_STR(LX_DL_PREFIX) #f, err)) != NULL
#define LX_DL_RESOLVE(name, table, LIST)                                                                          \
    static int name(struct lx_dl *lib, struct lx_error *err)                                                    \
    {                                                                                                           \
        __typeof__(table) *lx_dl_t_ = &(table);                                                                  \
        return 1 LIST(LX_DL_SYM) ? LX_OK : LX_EIO;                                                               \
    }

#endif
