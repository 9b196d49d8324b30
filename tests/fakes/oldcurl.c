/* oldcurl.c — a stand-in libcurl.so.4 that has every function hermes-mcp looks up but says it is
 * libcurl 7.80.0, older than hermes-mcp accepts (src/http/curlrt.h). Built by
 * tests/integration/http/lazycurl.test.mjs with `cc -shared -fPIC`; never linked into anything.
 * No curl header on purpose: only the names and curl_version_info's first fields matter. */
struct version_info { /* the head of curl_version_info_data */
    int age;
    const char *version;
    unsigned int version_num;
};

static const struct version_info old = {.age = 0, .version = "7.80.0", .version_num = 0x075000};

const struct version_info *curl_version_info(int which);
const struct version_info *curl_version_info(int which)
{
    (void)which;
    return &old;
}

/* The rest only have to exist; none is called once the version is refused. */
#define NAME(n)                                                                                    \
    int n(void);                                                                                   \
    int n(void)                                                                                    \
    {                                                                                              \
        return 2; /* CURLE_FAILED_INIT */                                                          \
    }
NAME(curl_global_init)
NAME(curl_easy_init)
NAME(curl_easy_cleanup)
NAME(curl_easy_setopt)
NAME(curl_easy_getinfo)
NAME(curl_easy_perform)
NAME(curl_easy_reset)
NAME(curl_easy_strerror)
NAME(curl_free)
NAME(curl_slist_append)
NAME(curl_slist_free_all)
NAME(curl_multi_init)
NAME(curl_multi_cleanup)
NAME(curl_multi_add_handle)
NAME(curl_multi_remove_handle)
NAME(curl_multi_setopt)
NAME(curl_multi_assign)
NAME(curl_multi_info_read)
NAME(curl_multi_perform)
NAME(curl_multi_poll)
NAME(curl_multi_socket_action)
NAME(curl_url)
NAME(curl_url_cleanup)
NAME(curl_url_get)
NAME(curl_url_set)
