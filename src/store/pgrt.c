/* pgrt.c — libpq through dlopen (pgrt.h). */
#define PGRT_NO_MACROS
#include "pgrt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dynsyms.h"

static struct pgrt_api loaded;
static bool ok;
static char load_error[300];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

#define S(field, name) DYNSYM(struct pgrt_api, field, name)
static const struct dynsym syms[] = {
    S(clear, "PQclear"),
    S(connectPoll, "PQconnectPoll"),
    S(connectStartParams, "PQconnectStartParams"),
    S(connectdbParams, "PQconnectdbParams"),
    S(consumeInput, "PQconsumeInput"),
    S(enterPipelineMode, "PQenterPipelineMode"),
    S(errorMessage, "PQerrorMessage"),
    S(escapeIdentifier, "PQescapeIdentifier"),
    S(exec, "PQexec"),
    S(execParams, "PQexecParams"),
    S(finish, "PQfinish"),
    S(flush, "PQflush"),
    S(freemem, "PQfreemem"),
    S(getResult, "PQgetResult"),
    S(getisnull, "PQgetisnull"),
    S(cmdtuples, "PQcmdTuples"),
    S(resulterrorfield, "PQresultErrorField"),
    S(getvalue, "PQgetvalue"),
    S(isBusy, "PQisBusy"),
    S(nfields, "PQnfields"),
    S(notifies, "PQnotifies"),
    S(ntuples, "PQntuples"),
    S(pipelineSync, "PQpipelineSync"),
    S(resultErrorMessage, "PQresultErrorMessage"),
    S(resultStatus, "PQresultStatus"),
    S(sendPrepare, "PQsendPrepare"),
    S(sendQueryParams, "PQsendQueryParams"),
    S(sendQueryPrepared, "PQsendQueryPrepared"),
    S(setNoticeProcessor, "PQsetNoticeProcessor"),
    S(setnonblocking, "PQsetnonblocking"),
    S(socket, "PQsocket"),
    S(status, "PQstatus"),
    S(libVersion, "PQlibVersion"),
};
#undef S

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
    missing = dynsyms_bind(h, &loaded, syms, sizeof syms / sizeof *syms);
    if (missing)
        goto fail;
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
