/* pgrt.h — libpq, loaded when a store needs it rather than linked.
 *
 * Linking libpq maps it and the libraries it needs (OpenSSL's libssl, Kerberos, LDAP) into
 * every process at start, whether or not STORE_URL is set: a server keeping its state in files
 * would carry them all (as with libcurl, curlrt.h). Files that use libpq include this header
 * instead of <libpq-fe.h>; each PQ* function they call goes through a table that pgrt_load
 * fills with dlopen("libpq.so.5"). pgrt_load must have succeeded before any PQ* call: the
 * store's entry points (pgconn_new, storeschema_connect) call it and say why when it fails.
 * Thread-safe (pthread_once). */
#ifndef HM_PGRT_H
#define HM_PGRT_H
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#define PGRT_SONAME "libpq.so.5"
#define PGRT_MIN_VERSION 140000 /* pipeline mode came with libpq 14 */

struct pgrt_api {
    __typeof__(PQclear) *clear;
    __typeof__(PQconnectPoll) *connectPoll;
    __typeof__(PQconnectStartParams) *connectStartParams;
    __typeof__(PQconnectdbParams) *connectdbParams;
    __typeof__(PQconsumeInput) *consumeInput;
    __typeof__(PQenterPipelineMode) *enterPipelineMode;
    __typeof__(PQerrorMessage) *errorMessage;
    __typeof__(PQescapeIdentifier) *escapeIdentifier;
    __typeof__(PQexec) *exec;
    __typeof__(PQexecParams) *execParams;
    __typeof__(PQfinish) *finish;
    __typeof__(PQflush) *flush;
    __typeof__(PQfreemem) *freemem;
    __typeof__(PQgetResult) *getResult;
    __typeof__(PQgetisnull) *getisnull;
    __typeof__(PQcmdTuples) *cmdtuples;
    __typeof__(PQresultErrorField) *resulterrorfield;
    __typeof__(PQgetvalue) *getvalue;
    __typeof__(PQisBusy) *isBusy;
    __typeof__(PQnfields) *nfields;
    __typeof__(PQnotifies) *notifies;
    __typeof__(PQntuples) *ntuples;
    __typeof__(PQpipelineSync) *pipelineSync;
    __typeof__(PQresultErrorMessage) *resultErrorMessage;
    __typeof__(PQresultStatus) *resultStatus;
    __typeof__(PQsendPrepare) *sendPrepare;
    __typeof__(PQsendQueryParams) *sendQueryParams;
    __typeof__(PQsendQueryPrepared) *sendQueryPrepared;
    __typeof__(PQsetNoticeProcessor) *setNoticeProcessor;
    __typeof__(PQsetnonblocking) *setnonblocking;
    __typeof__(PQsocket) *socket;
    __typeof__(PQstatus) *status;
    __typeof__(PQlibVersion) *libVersion;
};

/* Loads libpq once; false with the reason (the library, what is missing, the package to
 * install) in err. */
bool pgrt_load(char *err, size_t errlen);
/* The table; only after pgrt_load succeeded. */
const struct pgrt_api *pgrt(void);

#ifndef PGRT_NO_MACROS
#define PQclear (pgrt()->clear)
#define PQconnectPoll (pgrt()->connectPoll)
#define PQconnectStartParams (pgrt()->connectStartParams)
#define PQconnectdbParams (pgrt()->connectdbParams)
#define PQconsumeInput (pgrt()->consumeInput)
#define PQenterPipelineMode (pgrt()->enterPipelineMode)
#define PQerrorMessage (pgrt()->errorMessage)
#define PQescapeIdentifier (pgrt()->escapeIdentifier)
#define PQexec (pgrt()->exec)
#define PQexecParams (pgrt()->execParams)
#define PQfinish (pgrt()->finish)
#define PQflush (pgrt()->flush)
#define PQfreemem (pgrt()->freemem)
#define PQgetResult (pgrt()->getResult)
#define PQgetisnull (pgrt()->getisnull)
#define PQcmdTuples (pgrt()->cmdtuples)
#define PQresultErrorField (pgrt()->resulterrorfield)
#define PQgetvalue (pgrt()->getvalue)
#define PQisBusy (pgrt()->isBusy)
#define PQnfields (pgrt()->nfields)
#define PQnotifies (pgrt()->notifies)
#define PQntuples (pgrt()->ntuples)
#define PQpipelineSync (pgrt()->pipelineSync)
#define PQresultErrorMessage (pgrt()->resultErrorMessage)
#define PQresultStatus (pgrt()->resultStatus)
#define PQsendPrepare (pgrt()->sendPrepare)
#define PQsendQueryParams (pgrt()->sendQueryParams)
#define PQsendQueryPrepared (pgrt()->sendQueryPrepared)
#define PQsetNoticeProcessor (pgrt()->setNoticeProcessor)
#define PQsetnonblocking (pgrt()->setnonblocking)
#define PQsocket (pgrt()->socket)
#define PQstatus (pgrt()->status)
#define PQlibVersion (pgrt()->libVersion)
#endif

#endif
