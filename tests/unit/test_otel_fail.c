/* Unit tests for src/otel when the system fails it: libcurl that cannot be loaded (the tracer's
 * start fails: no lock it never made is destroyed), the kernel's random bytes that do not come
 * (a span is not recorded, once logged, instead of a loop), and the tracestate and service
 * name rules. dlopen, getrandom and the pthread mutex calls are interposed here (a definition in
 * the program wins over libc's): each passes through to libc unless a test says otherwise. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "otel.h"
#include "span.h"
#include "tracectx.h"

static bool curl_missing, random_broken;
static unsigned random_calls;
/* Mutexes initialised and not yet destroyed, and destroys of one never initialised. */
static pthread_mutex_t *live[64];
static unsigned bad_destroys;

void *dlopen(const char *file, int mode)
{
    static void *(*real)(const char *, int);
    if (curl_missing && file && strstr(file, "libcurl"))
        return NULL;
    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "dlopen");
    return real(file, mode);
}

ssize_t getrandom(void *buf, size_t n, unsigned flags)
{
    static ssize_t (*real)(void *, size_t, unsigned);
    random_calls++;
    if (random_broken) {
        errno = EIO;
        return -1;
    }
    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "getrandom");
    return real(buf, n, flags);
}

int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
    static int (*real)(pthread_mutex_t *, const pthread_mutexattr_t *);
    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "pthread_mutex_init");
    for (size_t i = 0; i < 64; i++)
        if (live[i] == NULL) {
            live[i] = m;
            break;
        }
    return real(m, a);
}

int pthread_mutex_destroy(pthread_mutex_t *m)
{
    static int (*real)(pthread_mutex_t *);
    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "pthread_mutex_destroy");
    size_t i = 0;
    while (i < 64 && live[i] != m)
        i++;
    if (i == 64) {
        bad_destroys++;
        return 0; /* never initialised: not handed to libc */
    }
    live[i] = NULL;
    return real(m);
}

static struct otel_config config(void)
{
    static char url[] = "http://127.0.0.1:9/v1/traces", svc[] = "t";
    return (struct otel_config){.url = url,
                                .service = svc,
                                .sampler = OTEL_SAMPLE_ALWAYS_ON,
                                .ratio = 1,
                                .timeout_ms = 100,
                                .queue_max = 8,
                                .delay_ms = 0,
                                .batch_max = 8};
}

/* In a child process: libcurl is loaded once a process, and the other tests need it. */
static void start_without_libcurl(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct otel_config c = config();
        char err[300];
        curl_missing = true;
        bad_destroys = 0;
        struct otel *t = otel_new(&c, "1", err, sizeof err);
        _exit(t != NULL ? 1 : strstr(err, "libcurl") == NULL ? 2 : bad_destroys != 0 ? 3 : 0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0); /* 3: a mutex never made was destroyed */
}

static void random_bytes_fail(void **state)
{
    (void)state;
    struct otel_config c = config();
    char err[300];
    struct otel *t = otel_new(&c, "1", err, sizeof err);
    assert_non_null(t);
    struct otel_span *s = otel_span_start(t, "before", OTEL_KIND_SERVER, NULL);
    assert_non_null(s);
    otel_span_discard(s);
    /* The pool is used up, then the kernel has nothing: no span, and no endless retry. */
    random_broken = true;
    random_calls = 0;
    unsigned started = 0;
    for (int i = 0; i < 400; i++) {
        s = otel_span_start(t, "after", OTEL_KIND_SERVER, NULL);
        started += s != NULL;
        otel_span_discard(s);
    }
    assert_true(started < 400);
    assert_true(random_calls >= 1 && random_calls <= 400);
    struct otel_ctx parent = {.trace_id = {1}, .span_id = {2}, .flags = 1};
    assert_null(otel_span_start_in(t, "child", OTEL_KIND_CLIENT, &parent, NULL));
    random_broken = false; /* the kernel is back: spans are again */
    s = otel_span_start(t, "again", OTEL_KIND_SERVER, NULL);
    assert_non_null(s);
    otel_span_discard(s);
    otel_free(t, 500);
}

static void tracestate_trim(void **state)
{
    (void)state;
    char out[OTEL_TRACESTATE_MAX + 1], big[2000];
    assert_int_equal(otel_tracestate_trim("a=1, b=2 ,,c=3", out, sizeof out), 11);
    assert_string_equal(out, "a=1,b=2,c=3");
    assert_int_equal(otel_tracestate_trim("a=1\nb=2", out, sizeof out), 0);
    assert_int_equal(otel_tracestate_trim("", out, sizeof out), 0);
    /* 20 members of 30 bytes: the first 16 fit in 512 (16 * 31 - 1 = 495). */
    size_t n = 0;
    for (int i = 0; i < 20; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "%sk%02d=%026d", i ? "," : "", i, 0);
    assert_int_equal(otel_tracestate_trim(big, out, sizeof out), 495);
    assert_memory_equal(out, big, 495);
    /* A member over 128 bytes goes first, wherever it is. */
    char huge[200];
    memset(huge, 'x', sizeof huge);
    huge[0] = 'h', huge[1] = '=';
    n = (size_t)snprintf(big, sizeof big, "%.*s", 199, huge);
    for (int i = 0; i < 12; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, ",k%02d=%026d", i, 0);
    assert_int_equal(otel_tracestate_trim(big, out, sizeof out), 12 * 31 - 1);
    assert_memory_equal(out, "k00=", 4);
    /* 33 members: the first 32 kept. */
    n = 0;
    for (int i = 0; i < 33; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "%sk%d=v", i ? "," : "", i);
    otel_tracestate_trim(big, out, sizeof out);
    assert_null(strstr(out, "k32="));
    assert_non_null(strstr(out, "k31=v"));
}

static const char *getenv_pairs(const char *key, void *arg)
{
    const char *const *kv = arg;
    for (; kv[0]; kv += 2)
        if (strcmp(kv[0], key) == 0)
            return kv[1];
    return NULL;
}

static void service_name_rule(void **state)
{
    (void)state;
    static const char *const cases[][7] = {
        {"OTEL_RESOURCE_ATTRIBUTES", "a=b,service.name=from%20attrs", NULL, NULL, "from attrs"},
        {"OTEL_RESOURCE_ATTRIBUTES", "service.name=x", "OTEL_SERVICE_NAME", "named", "named"},
        {"OTEL_RESOURCE_ATTRIBUTES", "a=b", NULL, NULL, "hermes-mcp"},
        {"OTEL_RESOURCE_ATTRIBUTES", "service.name=", NULL, NULL, "hermes-mcp"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *env[] = {"OTEL_EXPORTER_OTLP_ENDPOINT",
                             "http://127.0.0.1:4318",
                             cases[i][0],
                             cases[i][1],
                             cases[i][2],
                             cases[i][3],
                             NULL};
        struct otel_config c;
        char err[300];
        assert_true(otel_config_parse(&c, getenv_pairs, (void *)env, err, sizeof err));
        assert_string_equal(c.service, cases[i][4]);
        assert_int_equal(c.principal, OTEL_PRINCIPAL_DIGEST);
        otel_config_cleanup(&c);
    }
    const char *env[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318",
                         "OTEL_SPAN_PRINCIPAL", "names", NULL};
    struct otel_config c;
    char err[300];
    assert_false(otel_config_parse(&c, getenv_pairs, (void *)env, err, sizeof err));
    assert_non_null(strstr(err, "OTEL_SPAN_PRINCIPAL"));
}

static void principal_modes(void **state)
{
    (void)state;
    static const enum otel_principal modes[] = {OTEL_PRINCIPAL_DIGEST, OTEL_PRINCIPAL_PLAIN,
                                                OTEL_PRINCIPAL_OFF};
    for (size_t i = 0; i < 3; i++) {
        struct otel_config c = config();
        c.principal = modes[i];
        char err[300];
        struct otel *t = otel_new(&c, "1", err, sizeof err);
        assert_non_null(t);
        struct otel_span *s = otel_span_start(t, "p", OTEL_KIND_SERVER, NULL);
        for (int k = 0; k < 2; k++) /* the second time from the tracer's few last digests */
            otel_span_principal(s, "oidc:alice");
        if (modes[i] == OTEL_PRINCIPAL_OFF) {
            assert_int_equal(s->nattrs, 0);
        } else {
            assert_int_equal(s->nattrs, 1);
            assert_string_equal(s->attrs[0].key, "hermes.principal");
            const char *v = s->text + s->attrs[0].v.off;
            if (modes[i] == OTEL_PRINCIPAL_PLAIN)
                assert_string_equal(v, "oidc:alice");
            else /* sha256("oidc:alice"), its first 8 bytes */
                assert_true(strlen(v) == 23 && strncmp(v, "sha256:", 7) == 0 &&
                            strspn(v + 7, "0123456789abcdef") == 16);
        }
        otel_span_discard(s);
        otel_free(t, 500);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(start_without_libcurl), cmocka_unit_test(tracestate_trim),
        cmocka_unit_test(service_name_rule),     cmocka_unit_test(principal_modes),
        cmocka_unit_test(random_bytes_fail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
