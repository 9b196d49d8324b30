/* startctx.c — reading the startup_context files. The tool takes no arguments, so the only
 * paths it can ever open are the ones the operator configured. Each is opened with O_NOFOLLOW
 * (a symbolic link at the configured path, even one swapped in after start, is reported as
 * missing rather than followed to a file nobody configured) and O_NONBLOCK (a FIFO or device
 * put in place of a file must not hang the event loop: the open returns at once and fstat
 * refuses anything but a regular file). Reads are bounded by max_bytes per file and by
 * GW_STARTUP_BYTES_CAP in total, so a huge file costs at most that much memory; the cut is
 * moved back to a character boundary and invalid UTF-8 is replaced by U+FFFD so the result is
 * always valid JSON text. Directories above the file are the operator's: they are followed. */
#include "startctx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "gwfile.h"
#include "log.h"
#include "mcp.h"
#include "mem.h"
#include "toolerr.h"

struct startctx {
    size_t n;
    char **shown; /* as configured (~ kept): what the client sees */
    char **path;  /* ~ expanded, or NULL when it cannot be (no HOME) */
    size_t max_bytes;
};

struct startctx *startctx_new(const json_t *files, size_t max_bytes, const char *home)
{
    struct startctx *s = xcalloc(1, sizeof *s);
    s->n = json_array_size(files);
    s->shown = xcalloc(s->n + 1, sizeof *s->shown);
    s->path = xcalloc(s->n + 1, sizeof *s->path);
    s->max_bytes = max_bytes;
    for (size_t i = 0; i < s->n; i++) {
        const char *p = json_string_value(json_array_get(files, i));
        s->shown[i] = xstrdup(p);
        if (p[0] != '~')
            s->path[i] = xstrdup(p);
        else if (home && home[0] == '/')
            s->path[i] = xasprintf("%s%s", home, p + 1);
    }
    return s;
}

void startctx_free(struct startctx *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->shown[i]);
        free(s->path[i]);
    }
    free(s->shown);
    free(s->path);
    free(s);
}

void startctx_replace(struct startctx *s, const json_t *files, size_t max_bytes, const char *home)
{
    struct startctx *fresh = startctx_new(files, max_bytes, home), old = *s;
    *s = *fresh;
    *fresh = old;
    startctx_free(fresh); /* now holding the old lists */
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 when invalid or cut short. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return c ? 1 : 0; /* NUL is replaced too: it would end the text for many clients */
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    unsigned cp = c & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* Where to cut n bytes read from a longer file so that no character is split. */
static size_t cut_at_char(const unsigned char *p, size_t n)
{
    size_t back = 0;
    while (back < 3 && back < n && (p[n - 1 - back] & 0xc0) == 0x80)
        back++;
    if (back < n && p[n - 1 - back] >= 0xc0 && utf8_seq(p + n - 1 - back, back + 1) == 0)
        return n - 1 - back; /* a lead byte whose sequence the cut broke */
    return n;
}

/* p[0..n) as valid UTF-8: each invalid byte becomes U+FFFD. */
static json_t *text_json(const unsigned char *p, size_t n)
{
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq(p + i, n - i);
        if (len) {
            buf_append(&b, (const char *)p + i, len);
            i += len;
        } else {
            buf_append(&b, "\xef\xbf\xbd", 3);
            i++;
        }
    }
    json_t *t = json_stringn(b.data ? b.data : "", b.len);
    buf_cleanup(&b);
    return t;
}

static json_t *missing(const char *shown, const char *reason)
{
    return json_pack("{s:s, s:b, s:s}", "path", shown, "missing", 1, "reason", reason);
}

/* Opens the configured path itself (no link followed, never blocking); -1 with *reason set. */
static int open_configured(const char *path, const char **reason)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        *reason = errno == ENOENT || errno == ENOTDIR ? "not found"
                  : errno == ELOOP                    ? "a symbolic link, not followed"
                  : errno == EACCES                   ? "permission denied"
                                                      : "unreadable";
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        *reason = "not a regular file";
        return -1;
    }
    return fd;
}

/* Reads one file, at most cap bytes (cap + 1 tried, to know it was cut); *used gets the bytes
 * kept. */
static json_t *read_one(const char *shown, const char *path, size_t cap, size_t *used)
{
    const char *reason = "not found";
    *used = 0;
    if (path == NULL)
        return missing(shown, "HOME is not set");
    int fd = open_configured(path, &reason);
    if (fd < 0)
        return missing(shown, reason);
    unsigned char *data = xmalloc(cap + 1);
    size_t n = 0;
    bool failed = false;
    while (n < cap + 1) {
        ssize_t r = read(fd, data + n, cap + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            failed = true;
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (failed) {
        free(data);
        return missing(shown, "unreadable");
    }
    bool truncated = n > cap;
    if (truncated)
        n = cut_at_char(data, cap);
    json_t *text = text_json(data, n);
    free(data);
    *used = n;
    return json_pack("{s:s, s:o, s:I, s:b}", "path", shown, "text", text, "bytes", (json_int_t)n,
                     "truncated", truncated);
}

json_t *startctx_read(const struct startctx *s)
{
    json_t *files = json_array();
    size_t left = GW_STARTUP_BYTES_CAP;
    for (size_t i = 0; i < s->n; i++) {
        size_t cap = s->max_bytes < left ? s->max_bytes : left, used;
        json_array_append_new(files, read_one(s->shown[i], s->path[i], cap, &used));
        left -= used;
    }
    return json_pack("{s:o}", "files", files);
}

static void handle(struct mcp_call *call, json_t *args, void *arg)
{
    /* Nothing in them could name a path anyway; refused so a client learns it cannot. */
    if (json_object_size(args) > 0) {
        mcp_call_result_take(
            call, tool_error_json(TE_INVALID_ARGUMENTS, 0, STARTCTX_TOOL " takes no arguments"));
        return;
    }
    mcp_call_tool_result_take(call, startctx_read(arg));
}

static json_t *output_schema(void)
{
    return json_pack(
        "{s:s, s:{s:{s:s, s:{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}},"
        " s:[s]}}}, s:[s]}",
        "type", "object", "properties", "files", "type", "array", "items", "type", "object",
        "properties", "path", "type", "string", "text", "type", "string", "bytes", "type",
        "integer", "truncated", "type", "boolean", "missing", "type", "boolean", "reason", "type",
        "string", "required", "path", "required", "files");
}

void startctx_register(struct startctx *s, struct mcp_server *mcp, const char *scope)
{
    mcp_add_tool(mcp,
                 &(struct mcp_tool_def){
                     .name = STARTCTX_TOOL,
                     .title = "Startup context",
                     .description =
                         "Returns the operator's configured startup context files (UTF-8 text, "
                         "each capped; a file that cannot be read is listed as missing). Takes no "
                         "arguments.",
                     .input_schema = json_pack("{s:s, s:{}, s:b}", "type", "object", "properties",
                                               "additionalProperties", 0),
                     .output_schema = toolerr_output_schema(output_schema()),
                     .annotations = json_pack("{s:b, s:b, s:b}", "readOnlyHint", 1,
                                              "destructiveHint", 0, "openWorldHint", 0),
                     .handler = handle,
                     .arg = s,
                     .scope = scope});
}
