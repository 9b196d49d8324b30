/* httpd_internal.h — what httpd.c (the MHD adapter, the listener, drain) and hreq.c (one
 * request: its answer, its stream, its accessors) share. Nothing outside src/http includes it. */
#ifndef HM_HTTPD_INTERNAL_H
#define HM_HTTPD_INTERNAL_H
#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "httpd.h"
#include "list.h"
#include "loop.h"

#define STREAM_BACKLOG_MAX (8u * 1024u * 1024u) /* unsent stream bytes per response */
#define RETRY_AFTER_S "5" /* what a 503 at shutdown tells the client: a restart is quick */
/* MHD's memory pool per connection: request line and headers (more is 431; a 10 KiB bearer
 * token must still get its 401), read buffer and response headers. Bodies are copied out as
 * they arrive. Every open connection holds one, waiting ones too; only its touched pages count. */
#define CONN_MEMORY (16u * 1024u)

enum hreq_state {
    HREQ_READING,   /* headers seen, body arriving */
    HREQ_HANDLING,  /* inside a callback */
    HREQ_WAITING,   /* suspended, no answer yet */
    HREQ_HELD,      /* suspended before its body is read: on_headers held it (hreq_hold) */
    HREQ_RELEASED,  /* held, then released: on_headers runs again */
    HREQ_REPLIED,   /* full response ready or queued */
    HREQ_STREAMING, /* chunked response under way */
    HREQ_ABORTED,   /* client gone or server stopping; close */
};

struct resp_header {
    char *name, *value;
};

struct hreq {
    struct httpd *h;
    struct MHD_Connection *conn;
    const char *method, *path; /* owned by MHD for the request's life */
    enum hreq_state state;
    bool suspended;
    bool queued;       /* a response was handed to MHD */
    bool stream_ended; /* stream: no more writes */
    bool too_big;
    size_t discarded; /* body bytes dropped after the cap was passed */
    struct buf body;
    unsigned status;
    char *content_type;
    char *reply; /* full reply body until MHD takes it */
    size_t reply_len;
    struct buf out; /* stream bytes not yet taken by MHD */
    struct resp_header *hdrs;
    size_t nhdrs;
    httpd_cb *abort_cb;
    void *abort_arg;
    struct loop_timer *abort_later; /* a dropped stream's abort, run on a clean stack */
    struct loop_watch *hup;
    struct list link; /* in the list of live requests */
    char peer[INET6_ADDRSTRLEN];
    uint64_t started_ms;
    void *user;
    void (*user_free)(void *user);
};

/* Per connection: the deadline for the request being received (slowloris defence). */
struct conn {
    struct httpd *h;
    int fd;
    struct loop_timer *deadline;
    char peer[INET6_ADDRSTRLEN]; /* the client's address as text, once per connection */
};

struct httpd {
    struct loop *loop;
    struct MHD_Daemon *mhd;
    struct loop_watch *w;
    struct loop_timer *timer;
    struct httpd_opts o;
    unsigned port;
    struct list live; /* struct hreq, by link */
    size_t nlive;
    MHD_socket lfd; /* ours again once quiesced; closed when draining starts */
    bool quiesced;  /* MHD accepts no more connections */
    bool draining;  /* new requests get 503; those under way go on */
    bool stopping;
    bool in_pump, kick;
};

/* hreq.c */
void hreq_live_add(struct httpd *h, struct hreq *r);
void hreq_live_del(struct httpd *h, struct hreq *r);
void hreq_fire_abort(struct hreq *r); /* the owner's abort callback, once */
void hreq_suspend(struct hreq *r);    /* parks the connection, watching for a hang-up */
void hreq_resume(struct hreq *r);
enum MHD_Result hreq_queue_response(struct hreq *r); /* hands the answer to MHD */
void hreq_user_drop(struct hreq *r);

/* httpd.c */
void httpd_kick(struct httpd *h); /* runs MHD again soon: a resumed connection has work */

#endif
