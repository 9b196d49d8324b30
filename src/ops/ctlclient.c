/* ctlclient.c — one request on the control socket (ctlclient.h). The answer is capped (a full
 * approval queue's list is well under the cap) and waited for at most ANSWER_TIMEOUT_S. */
#include "ctlclient.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "buf.h"
#include "ctlsock.h"
#include "mem.h"

#define ANSWER_MAX (1024u * 1024u)
#define ANSWER_TIMEOUT_S 10

json_t *ctlclient_ask(const char *path, const char *line, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        snprintf(err, errlen, "no server is running with this env file (%s: %s)", path,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    struct timeval tv = {.tv_sec = ANSWER_TIMEOUT_S};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    size_t n = strlen(line), off = 0;
    while (off < n) {
        ssize_t put = send(fd, line + off, n - off, MSG_NOSIGNAL);
        if (put <= 0)
            break;
        off += (size_t)put;
    }
    char *buf = xmalloc(ANSWER_MAX + 1);
    size_t have = 0;
    while (have < ANSWER_MAX) {
        ssize_t got = read(fd, buf + have, ANSWER_MAX - have);
        if (got <= 0)
            break;
        have += (size_t)got;
    }
    close(fd);
    json_t *j = json_loadb(buf, have, 0, NULL);
    free(buf);
    if (!json_is_object(j)) {
        snprintf(err, errlen, "the server at %s gave no answer", path);
        json_decref(j);
        return NULL;
    }
    return j;
}

char *ctlclient_restart_needed(const char *env_file)
{
    char err[400];
    char *path = ctlsock_path(env_file);
    json_t *ans = path ? ctlclient_ask(path, "{\"op\":\"status\"}\n", err, sizeof err) : NULL;
    free(path);
    json_t *list = json_object_get(ans, "gateway_restart_needed"), *item;
    size_t i;
    struct buf out;
    buf_init(&out, 0);
    if (json_is_true(json_object_get(ans, "ok")))
        json_array_foreach(list, i, item)
        {
            const char *text = json_string_value(item);
            buf_printf(&out, "%s%s", i ? "; " : "", text ? text : "?");
        }
    json_decref(ans);
    if (out.len == 0) {
        buf_cleanup(&out);
        return NULL;
    }
    return buf_detach(&out, NULL);
}
