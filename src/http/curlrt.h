/* curlrt.h — libcurl, loaded on its first use rather than linked.
 *
 * Linking libcurl maps it and some twenty libraries it needs (OpenSSL, libssh2, Kerberos,
 * LDAP...) into every process at start, about 1.8 MiB of touched pages, and its global init
 * another 2.5 MiB: a server that no one calls and that proxies nothing would carry them all.
 * Files that use libcurl include this header instead of <curl/curl.h>; each curl_* function
 * they call goes through a table that the first call fills with dlopen("libcurl.so.4"). If the
 * library cannot be loaded, the entry points fail as libcurl itself fails (NULL handles,
 * CURLE_FAILED_INIT) and curlrt_error() says why. Thread-safe (pthread_once). */
#ifndef HM_CURLRT_H
#define HM_CURLRT_H

#define CURL_DISABLE_TYPECHECK /* its macros would call the symbols by name */
#include <curl/curl.h>

/* The libcurl functions the project uses; a call to one not listed fails to link. */
struct curlrt_api {
    __typeof__(curl_global_init) *global_init;
    __typeof__(curl_global_cleanup) *global_cleanup;
    __typeof__(curl_easy_init) *easy_init;
    __typeof__(curl_easy_cleanup) *easy_cleanup;
    __typeof__(curl_easy_setopt) *easy_setopt;
    __typeof__(curl_easy_getinfo) *easy_getinfo;
    __typeof__(curl_easy_perform) *easy_perform;
    __typeof__(curl_easy_reset) *easy_reset;
    __typeof__(curl_easy_strerror) *easy_strerror;
    __typeof__(curl_free) *free;
    __typeof__(curl_slist_append) *slist_append;
    __typeof__(curl_slist_free_all) *slist_free_all;
    __typeof__(curl_multi_init) *multi_init;
    __typeof__(curl_multi_cleanup) *multi_cleanup;
    __typeof__(curl_multi_add_handle) *multi_add_handle;
    __typeof__(curl_multi_remove_handle) *multi_remove_handle;
    __typeof__(curl_multi_setopt) *multi_setopt;
    __typeof__(curl_multi_assign) *multi_assign;
    __typeof__(curl_multi_info_read) *multi_info_read;
    __typeof__(curl_multi_perform) *multi_perform;
    __typeof__(curl_multi_poll) *multi_poll;
    __typeof__(curl_multi_socket_action) *multi_socket_action;
    __typeof__(curl_url) *url;
    __typeof__(curl_url_cleanup) *url_cleanup;
    __typeof__(curl_url_get) *url_get;
    __typeof__(curl_url_set) *url_set;
};

/* The table, loading libcurl on the first call. Never NULL. */
const struct curlrt_api *curlrt(void);

/* Why libcurl could not be loaded, or NULL when it was (or was not tried yet). */
const char *curlrt_error(void);

#ifndef CURLRT_NO_MACROS
/* curl.h defines some of these as macros that check the argument count; ours replace them. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt
#define curl_global_init (curlrt()->global_init)
#define curl_global_cleanup (curlrt()->global_cleanup)
#define curl_easy_init (curlrt()->easy_init)
#define curl_easy_cleanup (curlrt()->easy_cleanup)
#define curl_easy_setopt (curlrt()->easy_setopt)
#define curl_easy_getinfo (curlrt()->easy_getinfo)
#define curl_easy_perform (curlrt()->easy_perform)
#define curl_easy_reset (curlrt()->easy_reset)
#define curl_easy_strerror (curlrt()->easy_strerror)
#define curl_free (curlrt()->free)
#define curl_slist_append (curlrt()->slist_append)
#define curl_slist_free_all (curlrt()->slist_free_all)
#define curl_multi_init (curlrt()->multi_init)
#define curl_multi_cleanup (curlrt()->multi_cleanup)
#define curl_multi_add_handle (curlrt()->multi_add_handle)
#define curl_multi_remove_handle (curlrt()->multi_remove_handle)
#define curl_multi_setopt (curlrt()->multi_setopt)
#define curl_multi_assign (curlrt()->multi_assign)
#define curl_multi_info_read (curlrt()->multi_info_read)
#define curl_multi_perform (curlrt()->multi_perform)
#define curl_multi_poll (curlrt()->multi_poll)
#define curl_multi_socket_action (curlrt()->multi_socket_action)
#define curl_url (curlrt()->url)
#define curl_url_cleanup (curlrt()->url_cleanup)
#define curl_url_get (curlrt()->url_get)
#define curl_url_set (curlrt()->url_set)
#endif

#endif
