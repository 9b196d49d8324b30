/* bench/oidc.c — what an identity provider's token costs on a client's next requests: the
 * server remembers a verified token (by its SHA-256) until its exp, so every request after the
 * first costs oidc_check's lookup and the principal built from the remembered claims (scopes
 * mapped, rules applied), not a signature. CPU microseconds of one thread per request, median of
 * ROUNDS rounds. Build and run: make bench-oidc (bench/RESULTS.md, "JWT verification"). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "hex.h"
#include "httpc.h"
#include "loop.h"
#include "oidc.h"
#include "oidc_internal.h"
#include "principal.h"

#define ROUNDS 9
#define PER_ROUND 200000
/* A typical access token's length and claims; the text is never parsed on this path. */
#define TOKEN_LEN 792

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void ready(void *arg)
{
    (void)arg;
}

int main(void)
{
    struct loop *l = loop_new();
    struct httpc *http = httpc_new(l, 1);
    static const char *const aud[] = {"https://mcp.example/mcp"};
    struct oidc *o = oidc_new(l, http, &(struct oidc_opts){.audiences = aud, .naudiences = 1});
    char token[TOKEN_LEN + 1], hash[65];
    unsigned char d[32];
    memset(token, 'a', TOKEN_LEN);
    token[TOKEN_LEN] = '\0';
    crypto_sha256(token, TOKEN_LEN, d);
    hex_encode(d, 32, hash);
    json_t *claims = json_loads(
        "{\"iss\":\"https://idp.example\",\"aud\":\"https://mcp.example/mcp\",\"sub\":\"5b0a1f7e-"
        "3c1d-4f2b-9a8e-0d6c2e4f8a1b\",\"azp\":\"ci-runner\",\"scope\":\"openid hermes:read "
        "hermes:task gateway:github\",\"exp\":4000000000}",
        0, NULL);
    oidc_remember(o, hash, claims, false, (time_t)4000000000);

    const struct oidc_hooks hooks = {.ready = ready};
    double us[ROUNDS];
    for (int round = 0; round < ROUNDS; round++) {
        double t0 = now_us();
        for (int i = 0; i < PER_ROUND; i++) {
            struct principal *p;
            char *client_id;
            const char *why;
            struct oidc_wait *w;
            if (oidc_check(o, token, NULL, &p, &client_id, &why, &hooks, &w) != OIDC_OK) {
                fprintf(stderr, "bench-oidc: the remembered token was not accepted\n");
                return 1;
            }
            principal_free(p);
            free(client_id);
        }
        us[round] = (now_us() - t0) / PER_ROUND;
    }
    qsort(us, ROUNDS, sizeof *us, by_value);
    printf("| path | us/request (median of %d rounds) | best round |\n|---|---:|---:|\n", ROUNDS);
    printf("| a remembered token (%d bytes): SHA-256, lookup, principal from its claims | %.2f | "
           "%.2f |\n",
           TOKEN_LEN, us[ROUNDS / 2], us[0]);
    oidc_free(o);
    httpc_free(http);
    loop_free(l);
    return 0;
}
