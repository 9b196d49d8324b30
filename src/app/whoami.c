/* whoami.c — a principal described for the whoami tool (see whoami.h). */
#include "whoami.h"

#include <time.h>

#include "timefmt.h"

static json_t *names(char *const *v, size_t n, bool every)
{
    json_t *a = json_array();
    if (every) {
        json_array_append_new(a, json_string("*"));
        return a;
    }
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

json_t *whoami_describe(const struct principal *p, enum whoami_kind kind, const char *client_id)
{
    static const char *const kinds[] = {"owner", "token", "oauth", "oidc"};
    json_t *expires = json_null();
    if (p->expires) {
        char when[TIMEFMT_SIZE];
        expires = json_string(timefmt_iso(p->expires, when));
    }
    json_t *o =
        json_pack("{s:s, s:s, s:o, s:o, s:o}", "principal", p->name, "kind", kinds[kind], "scopes",
                  names(p->scopes, p->nscopes, p->all), "agents",
                  names(p->agents, p->nagents, p->all || p->agents == NULL), "expires_at", expires);
    if (client_id)
        json_object_set_new(o, "client_id", json_string(client_id));
    return o;
}
