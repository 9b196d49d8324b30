/* doctor_internal.h — what the files of `hermes-mcp doctor` share: its state, the lines it
 * prints (each check one line, secrets scrubbed at printing), a capped GET, and the agent
 * checks (doctor_agents.c: the registry, the agent env file, each agent's key and probes). */
#ifndef HM_DOCTOR_INTERNAL_H
#define HM_DOCTOR_INTERNAL_H
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "report.h"

#define LINES_MAX 256

struct config;

enum level { OK, WARN, FAIL };

struct line {
    enum level level;
    char *text;
};

struct doctor {
    const char *env_path;
    bool probe;
    long timeout_ms;
    unsigned counts[3];
    struct line lines[LINES_MAX];
    size_t nlines;
    struct report rep; /* the token, API_SERVER_KEY, the registry agents' keys */
};

/* An agent as serve would use it, and where its key comes from (for the fix). */
struct agent_check {
    const char *name;
    const char *url;
    char *key;
    char key_fix[PATH_MAX + 200]; /* what to check when the agent rejects the key */
    char net_fix[PATH_MAX + 200]; /* what to do when it cannot be reached */
};

/* One line of the report, counted by level (printed at the end, once every secret is known). */
void doctor_check(struct doctor *d, enum level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A value no line may show (a key, a token). */
void doctor_secret(struct doctor *d, const char *s);
/* env[key] as a string, or NULL. */
const char *doctor_get(json_t *env, const char *key);

/* A GET with a capped body (what is past the cap is dropped): its status, or why it got no
 * answer. */
struct doctor_resp {
    bool answered; /* an HTTP answer came: status is its */
    long status;
    bool timed_out;   /* otherwise: no answer in time, */
    bool no_host;     /* the host name did not resolve, */
    int os_errno;     /* the connection's system error, or 0, */
    char reason[128]; /* and libcurl's generic text for it */
    struct buf body;
};
void doctor_probe_get(const char *url, const char *key, long timeout_ms, struct doctor_resp *r);
/* Why a request got no HTTP answer, in a few words. */
void doctor_net_reason(const struct doctor_resp *r, long timeout_ms, char *out, size_t outlen);

/* Each OIDC_ISSUER_URL: its metadata and key set, fetched as serve does (unless --no-probe). */
void doctor_check_oidc(struct doctor *d, const struct config *cfg);

/* The agents serve would use (the registry, or the default agent of HERMES_ENV_PATH), their
 * keys, and unless --no-probe their /health and /v1/models. */
void doctor_check_agents(struct doctor *d, const struct config *cfg);

#endif
