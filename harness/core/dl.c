/*
** harness/core/dl.c - libraries opened at their first use (see dl.h).
*/
#include "harness/core/dl.h"

#include <dlfcn.h>
#include <pthread.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

int lx_dl_load(struct lx_dl *lib, int (*resolve)(struct lx_dl *lib, struct lx_error *err), struct lx_error *err)
{
    pthread_mutex_lock(&mu);
    if (!lib->tried) {
        lib->tried = 1;
        lib->handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
        if (!lib->handle) {
            const char *why = dlerror();
            lib->rc = lx_err(&lib->err, LX_EIO, "%s needs %s, which cannot be loaded: %s\n  hint: apt-get install %s "
                             "(scripts/deps.sh installs every library lenx uses)", lib->use, lib->soname,
                             why ? why : "no reason given", lib->package);
        } else {
            lib->rc = resolve(lib, &lib->err);
        }
    }
    int rc = lib->rc;
    if (rc < 0 && err)
        *err = lib->err;
    pthread_mutex_unlock(&mu);
    return rc;
}

void *lx_dl_sym(struct lx_dl *lib, const char *name, struct lx_error *err)
{
    dlerror();
    void *p = dlsym(lib->handle, name);
    if (!p)
        lx_err(err, LX_EIO, "%s needs %s from %s, which does not have it\n  hint: the library is older than the "
               "header lenx was built with; apt-get install --only-upgrade %s, then rebuild lenx", lib->use, name,
               lib->soname, lib->package);
    return p;
}
