/* curlrt.c — see curlrt.h: libcurl's functions through a table filled on first use. */
#define CURLRT_NO_MACROS
#include "curlrt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dynsyms.h"

#include "log.h"

/* The soname Debian's libcurl4 (and the -dev package we build against) installs. */
#define CURLRT_SONAME "libcurl.so.4"

/* What the entry points do when libcurl cannot be loaded: fail as libcurl does. */
static char load_error[300];

static CURLcode stub_global_init(long flags)
{
    (void)flags;
    return CURLE_FAILED_INIT;
}
static CURL *stub_easy_init(void)
{
    return NULL;
}
static void stub_easy_cleanup(CURL *h)
{
    (void)h;
}
static CURLcode stub_easy_setopt(CURL *h, CURLoption o, ...)
{
    (void)h, (void)o;
    return CURLE_FAILED_INIT;
}
static CURLcode stub_easy_getinfo(CURL *h, CURLINFO i, ...)
{
    (void)h, (void)i;
    return CURLE_FAILED_INIT;
}
static CURLcode stub_easy_perform(CURL *h)
{
    (void)h;
    return CURLE_FAILED_INIT;
}
static const char *stub_easy_strerror(CURLcode c)
{
    (void)c;
    return load_error;
}
static void stub_free(void *p)
{
    (void)p;
}
static struct curl_slist *stub_slist_append(struct curl_slist *l, const char *s)
{
    (void)l, (void)s;
    return NULL;
}
static void stub_slist_free_all(struct curl_slist *l)
{
    (void)l;
}
static CURLM *stub_multi_init(void)
{
    return NULL;
}
static CURLMcode stub_multi_cleanup(CURLM *m)
{
    (void)m;
    return CURLM_BAD_HANDLE;
}
static CURLMcode stub_multi_handle(CURLM *m, CURL *h)
{
    (void)m, (void)h;
    return CURLM_BAD_HANDLE;
}
static CURLMcode stub_multi_setopt(CURLM *m, CURLMoption o, ...)
{
    (void)m, (void)o;
    return CURLM_BAD_HANDLE;
}
static CURLMcode stub_multi_assign(CURLM *m, curl_socket_t s, void *p)
{
    (void)m, (void)s, (void)p;
    return CURLM_BAD_HANDLE;
}
static CURLMsg *stub_multi_info_read(CURLM *m, int *n)
{
    (void)m;
    *n = 0;
    return NULL;
}
static CURLMcode stub_multi_perform(CURLM *m, int *running)
{
    (void)m;
    *running = 0;
    return CURLM_BAD_HANDLE;
}
static CURLMcode stub_multi_poll(CURLM *m, struct curl_waitfd *fds, unsigned n, int ms, int *ret)
{
    (void)m, (void)fds, (void)n, (void)ms;
    if (ret)
        *ret = 0;
    return CURLM_BAD_HANDLE;
}
static CURLMcode stub_multi_socket_action(CURLM *m, curl_socket_t s, int ev, int *running)
{
    (void)m, (void)s, (void)ev;
    *running = 0;
    return CURLM_BAD_HANDLE;
}
static CURLU *stub_url(void)
{
    return NULL;
}
static void stub_url_cleanup(CURLU *u)
{
    (void)u;
}
static CURLUcode stub_url_get(CURLU *u, CURLUPart p, char **part, unsigned flags)
{
    (void)u, (void)p, (void)flags;
    *part = NULL;
    return CURLUE_BAD_HANDLE;
}
static curl_version_info_data *stub_version_info(CURLversion v)
{
    (void)v;
    return NULL;
}
static CURLUcode stub_url_set(CURLU *u, CURLUPart p, const char *part, unsigned flags)
{
    (void)u, (void)p, (void)part, (void)flags;
    return CURLUE_BAD_HANDLE;
}

static const struct curlrt_api stubs = {
    .global_init = stub_global_init,
    .easy_init = stub_easy_init,
    .easy_cleanup = stub_easy_cleanup,
    .easy_setopt = stub_easy_setopt,
    .easy_getinfo = stub_easy_getinfo,
    .easy_perform = stub_easy_perform,
    .easy_reset = stub_easy_cleanup,
    .easy_strerror = stub_easy_strerror,
    .free = stub_free,
    .slist_append = stub_slist_append,
    .slist_free_all = stub_slist_free_all,
    .multi_init = stub_multi_init,
    .multi_cleanup = stub_multi_cleanup,
    .multi_add_handle = stub_multi_handle,
    .multi_remove_handle = stub_multi_handle,
    .multi_setopt = stub_multi_setopt,
    .multi_assign = stub_multi_assign,
    .multi_info_read = stub_multi_info_read,
    .multi_perform = stub_multi_perform,
    .multi_poll = stub_multi_poll,
    .multi_socket_action = stub_multi_socket_action,
    .url = stub_url,
    .url_cleanup = stub_url_cleanup,
    .url_get = stub_url_get,
    .url_set = stub_url_set,
    .version_info = stub_version_info,
};

static struct curlrt_api loaded;
static const struct curlrt_api *api = &stubs;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

#define S(field, name) DYNSYM(struct curlrt_api, field, name)
static const struct dynsym syms[] = {
    S(global_init, "curl_global_init"),
    S(easy_init, "curl_easy_init"),
    S(easy_cleanup, "curl_easy_cleanup"),
    S(easy_setopt, "curl_easy_setopt"),
    S(easy_getinfo, "curl_easy_getinfo"),
    S(easy_perform, "curl_easy_perform"),
    S(easy_reset, "curl_easy_reset"),
    S(easy_strerror, "curl_easy_strerror"),
    S(free, "curl_free"),
    S(slist_append, "curl_slist_append"),
    S(slist_free_all, "curl_slist_free_all"),
    S(multi_init, "curl_multi_init"),
    S(multi_cleanup, "curl_multi_cleanup"),
    S(multi_add_handle, "curl_multi_add_handle"),
    S(multi_remove_handle, "curl_multi_remove_handle"),
    S(multi_setopt, "curl_multi_setopt"),
    S(multi_assign, "curl_multi_assign"),
    S(multi_info_read, "curl_multi_info_read"),
    S(multi_perform, "curl_multi_perform"),
    S(multi_poll, "curl_multi_poll"),
    S(multi_socket_action, "curl_multi_socket_action"),
    S(url, "curl_url"),
    S(url_cleanup, "curl_url_cleanup"),
    S(url_get, "curl_url_get"),
    S(url_set, "curl_url_set"),
    S(version_info, "curl_version_info"),
};
#undef S

static void load(void)
{
    const char *missing = NULL;
    void *h = dlopen(CURLRT_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error,
                 "%s cannot be loaded (%s); install libcurl4 " CURLRT_MIN_VERSION_TEXT " or later",
                 CURLRT_SONAME, why ? why : "unknown reason");
        log_error("%s", load_error);
        return;
    }
    missing = dynsyms_bind(h, &loaded, syms, sizeof syms / sizeof *syms);
    if (missing)
        goto fail;
    const curl_version_info_data *v = loaded.version_info(CURLVERSION_NOW);
    if (v == NULL || v->version_num < CURLRT_MIN_VERSION) {
        snprintf(load_error, sizeof load_error,
                 "%s is libcurl %s; hermes-mcp needs " CURLRT_MIN_VERSION_TEXT
                 " or later (install a newer libcurl4)",
                 CURLRT_SONAME, v && v->version ? v->version : "of an unknown version");
        log_error("%s", load_error);
        return; /* the handle stays open: see below */
    }
    api = &loaded;
    return;
fail:
    snprintf(load_error, sizeof load_error,
             "%s has no %s; install libcurl4 " CURLRT_MIN_VERSION_TEXT " or later", CURLRT_SONAME,
             missing);
    log_error("%s", load_error);
    /* The handle is not closed: the constructors of libcurl's own libraries (OpenSSL, GnuTLS,
     * Kerberos) have run, and unloading them under a running process is riskier than the
     * mapping it would give back. */
}

const struct curlrt_api *curlrt(void)
{
    pthread_once(&load_once, load);
    return api;
}

const char *curlrt_error(void)
{
    return load_error[0] ? load_error : NULL;
}
