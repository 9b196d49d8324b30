/* httpc_internal.h — what httpc.c (transfers on the loop) and httpc_block.c (blocking requests
 * and the exit batch) share: a request's options as curl needs them, the curl handle built from
 * them and the answer read back from it, so that the two ways of sending cannot drift apart. */
#ifndef HM_HTTPC_INTERNAL_H
#define HM_HTTPC_INTERNAL_H
#include "curlrt.h"
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "httpc.h"
#include "list.h"

struct host;

struct httpc_req {
    struct httpc *c; /* NULL for a blocking request */
    CURL *easy;      /* on the loop: NULL while waiting for a slot */
    struct host *host;
    struct list qlink; /* in the host's waiting queue */
    /* what the transfer needs once it starts */
    char *url;
    char method[8];
    long connect_timeout_ms;
    unsigned deadline_ms;
    uint64_t queued_at;
    struct curl_slist *headers;
    char *body;
    size_t body_len;
    struct buf resp;
    httpc_data_cb *on_data;
    httpc_header_cb *on_header;
    httpc_done_cb *on_done;
    void *arg;
    bool https_only, no_env_proxy;
    httpc_addr_cb *addr_ok;
    char *ca_file, *user_agent;
    bool too_big, aborted, addr_refused;
    bool in_done;            /* on_done is running: finish() frees r after it */
    struct httpc_req *dnext; /* in c->doomed; set once cancelled inside curl */
    bool is_doomed;
    char errbuf[CURL_ERROR_SIZE];
    struct list link; /* in c->reqs */
};

/* curl_global_init, once per process, on the first request rather than at start. */
bool httpc_global_ready(void);
/* Copies o's request into r (zeroed by the caller); httpc_req_clear frees the copies, the
 * header lines wiped first (they may carry a key). */
void httpc_req_fill(struct httpc_req *r, const struct httpc_opts *o);
void httpc_req_clear(struct httpc_req *r);
/* Sets on e (new or reset) everything r asks for; deadline_ms 0: none. */
void httpc_req_setup(struct httpc_req *r, CURL *e, long deadline_ms);
/* The answer of r's finished transfer on e, which ended with code. */
void httpc_req_result(struct httpc_req *r, CURL *e, CURLcode code, struct httpc_result *res);
/* A curl handle with what every request has (the base httpc_req_setup builds on); NULL if curl
 * refused. */
CURL *httpc_easy_new(const char *url, const char *method, struct curl_slist *headers,
                     long connect_timeout_ms, bool https_only, char *errbuf);
/* Frees a header list after wiping its lines. */
void httpc_headers_free(struct curl_slist *h);

#endif
