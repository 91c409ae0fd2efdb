/*
** harness/core/gz.c - the only file that includes <zlib.h> (gz.h).
*/
#include "harness/core/gz.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

int lx_gz_read(const char *path, struct lx_buf *out, long max_bytes, struct lx_error *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return lx_err(err, LX_EIO, "%s is a directory, not a file", path);
    gzFile f = gzopen(path, "rb");
    if (!f)
        return lx_err(err, LX_EIO, "cannot read %s: %s", path, errno ? strerror(errno) : "out of memory");
    char chunk[1 << 16];
    int k, rc = LX_OK;
    while (rc == LX_OK && (k = gzread(f, chunk, sizeof chunk)) > 0) {
        lx_buf_putn(out, chunk, (size_t)k);
        if (max_bytes > 0 && out->len > (size_t)max_bytes)
            rc = lx_err(err, LX_EINVAL, "%s holds more than %ld bytes", path, max_bytes);
    }
    int zerr = Z_OK;
    const char *why = gzerror(f, &zerr);
    if (rc == LX_OK && zerr != Z_OK && zerr != Z_STREAM_END)
        rc = lx_err(err, LX_EIO, "%s: %s\n  hint: is the .gz file whole?", path,
                    zerr == Z_ERRNO ? strerror(errno) : why);
    gzclose(f);
    return rc;
}
