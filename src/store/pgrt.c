/* pgrt.c — libpq through dlopen (pgrt.h). */
#define PGRT_NO_MACROS
#include "pgrt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static struct pgrt_api loaded;
static bool ok;
static char load_error[300];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* dlsym returns void *; ISO C has no conversion to a function pointer, POSIX guarantees it. */
#define PGRT_SYM(field, name)                                                                      \
    do {                                                                                           \
        void *p_ = dlsym(h, name);                                                                 \
        if (p_ == NULL) {                                                                          \
            missing = name;                                                                        \
            goto fail;                                                                             \
        }                                                                                          \
        memcpy(&loaded.field, &p_, sizeof p_);                                                     \
    } while (0)

static void load(void)
{
    const char *missing = NULL;
    void *h = dlopen(PGRT_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error,
                 "%s cannot be loaded (%s); install libpq5 (PostgreSQL 14 or later)", PGRT_SONAME,
                 why ? why : "unknown reason");
        return;
    }
    PGRT_SYM(clear, "PQclear");
    PGRT_SYM(connectPoll, "PQconnectPoll");
    PGRT_SYM(connectStartParams, "PQconnectStartParams");
    PGRT_SYM(connectdbParams, "PQconnectdbParams");
    PGRT_SYM(consumeInput, "PQconsumeInput");
    PGRT_SYM(enterPipelineMode, "PQenterPipelineMode");
    PGRT_SYM(errorMessage, "PQerrorMessage");
    PGRT_SYM(escapeIdentifier, "PQescapeIdentifier");
    PGRT_SYM(exec, "PQexec");
    PGRT_SYM(execParams, "PQexecParams");
    PGRT_SYM(finish, "PQfinish");
    PGRT_SYM(flush, "PQflush");
    PGRT_SYM(freemem, "PQfreemem");
    PGRT_SYM(getResult, "PQgetResult");
    PGRT_SYM(getisnull, "PQgetisnull");
    PGRT_SYM(cmdtuples, "PQcmdTuples");
    PGRT_SYM(resulterrorfield, "PQresultErrorField");
    PGRT_SYM(getvalue, "PQgetvalue");
    PGRT_SYM(isBusy, "PQisBusy");
    PGRT_SYM(nfields, "PQnfields");
    PGRT_SYM(notifies, "PQnotifies");
    PGRT_SYM(ntuples, "PQntuples");
    PGRT_SYM(pipelineSync, "PQpipelineSync");
    PGRT_SYM(resultErrorMessage, "PQresultErrorMessage");
    PGRT_SYM(resultStatus, "PQresultStatus");
    PGRT_SYM(sendPrepare, "PQsendPrepare");
    PGRT_SYM(sendQueryParams, "PQsendQueryParams");
    PGRT_SYM(sendQueryPrepared, "PQsendQueryPrepared");
    PGRT_SYM(setNoticeProcessor, "PQsetNoticeProcessor");
    PGRT_SYM(setnonblocking, "PQsetnonblocking");
    PGRT_SYM(socket, "PQsocket");
    PGRT_SYM(status, "PQstatus");
    PGRT_SYM(libVersion, "PQlibVersion");
    if (loaded.libVersion() < PGRT_MIN_VERSION) {
        snprintf(load_error, sizeof load_error,
                 "%s is libpq %d; hermes-mcp needs 14 or later (install a newer libpq5)",
                 PGRT_SONAME, loaded.libVersion());
        return; /* the handle stays open, as below */
    }
    ok = true;
    return;
fail:
    snprintf(load_error, sizeof load_error, "%s has no %s; install libpq5 (PostgreSQL 14 or later)",
             PGRT_SONAME, missing);
    /* Not closed: the constructors of the libraries it brought (OpenSSL, Kerberos) have run. */
}

bool pgrt_load(char *err, size_t errlen)
{
    pthread_once(&load_once, load);
    if (!ok && errlen)
        snprintf(err, errlen, "%s", load_error);
    return ok;
}

const struct pgrt_api *pgrt(void)
{
    return &loaded;
}
