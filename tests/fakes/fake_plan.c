/* fake_plan.c — steering directives, the demo agent's answer, and the work timeline. */
#include "fake_plan.h"
#include "fake_sb.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (p == NULL)
        abort();
    return p;
}

/* ---- directives ---- */

/* Reads a directive value up to its unescaped ']' (escapes: \] \\ \n). Returns a pointer just
 * past the ']' and the value in *out (owned), or NULL (no closing bracket: not a directive). */
static const char *read_value(const char *s, char **out)
{
    struct sb v = {0};
    for (const char *q = s; *q; q++) {
        if (*q == '\\' && (q[1] == ']' || q[1] == '\\' || q[1] == 'n')) {
            sb_add(&v, q[1] == 'n' ? "\n" : q + 1, 1);
            q++;
        } else if (*q == ']') {
            *out = sb_take(&v);
            return q + 1;
        } else {
            sb_add(&v, q, 1);
        }
    }
    free(v.p);
    return NULL;
}

/* Reads "<digits>]"; returns a pointer past the ']' or NULL. */
static const char *read_number(const char *s, long max, long *out)
{
    long v = 0;
    const char *q = s;
    if (!isdigit((unsigned char)*q))
        return NULL;
    for (; isdigit((unsigned char)*q); q++)
        v = v > max ? max + 1 : v * 10 + (*q - '0');
    if (*q != ']')
        return NULL;
    *out = v > max ? max : v;
    return q + 1;
}

static bool word_at(const char *s, const char *w, const char **after)
{
    size_t n = strlen(w);
    if (strncasecmp(s, w, n) != 0)
        return false;
    *after = s + n;
    return true;
}

/* Tries to read one directive at s (which points at '['); applies it to p. Returns a pointer
 * past it, or NULL when s does not start a directive. */
static const char *directive(struct plan *p, const char *s, double scale)
{
    const char *a;
    long v;
    char *val;

    s++;
    if (word_at(s, "delay=", &a) && (a = read_number(a, PLAN_MAX_DELAY_MS, &v))) {
        double d = (double)v * scale;
        p->delay_ms = d > (double)PLAN_MAX_DELAY_MS ? PLAN_MAX_DELAY_MS : (long)llround(d);
        return a;
    }
    if (word_at(s, "progress=", &a) && (a = read_number(a, PLAN_MAX_PROGRESS, &v))) {
        p->progress = (int)v;
        return a;
    }
    if (word_at(s, "fail]", &a)) {
        p->fail = true;
        free(p->fail_msg);
        p->fail_msg = xstrdup("simulated failure");
        return a;
    }
    if (word_at(s, "fail=", &a) && (a = read_value(a, &val))) {
        p->fail = true;
        free(p->fail_msg);
        p->fail_msg = *val ? val : (free(val), xstrdup("simulated failure"));
        return a;
    }
    if (word_at(s, "partial]", &a)) {
        p->partial = true;
        return a;
    }
    if (word_at(s, "forget]", &a)) {
        p->forget = true;
        return a;
    }
    if (word_at(s, "orphan]", &a)) {
        p->orphan = true;
        return a;
    }
    if (word_at(s, "approval]", &a)) {
        free(p->approval);
        p->approval = xstrdup("rm -rf build/");
        return a;
    }
    if (word_at(s, "approval2=", &a) && (a = read_value(a, &val))) {
        free(p->approval2);
        p->approval2 = val;
        return a;
    }
    if (word_at(s, "approval=", &a) && (a = read_value(a, &val))) {
        free(p->approval);
        p->approval = *val ? val : (free(val), xstrdup("rm -rf build/"));
        return a;
    }
    if (word_at(s, "json]", &a)) {
        p->json_fence = true;
        return a;
    }
    if (word_at(s, "repeat=", &a) && (a = read_number(a, PLAN_MAX_REPEAT, &v))) {
        p->repeat = v;
        return a;
    }
    if (word_at(s, "text=", &a) && (a = read_value(a, &val))) {
        free(p->text);
        p->text = val;
        return a;
    }
    return NULL;
}

/* Collapses runs of whitespace to one space and trims both ends, in place. */
static void collapse_ws(char *s)
{
    char *w = s;
    bool space = false;
    for (const char *r = s; *r; r++) {
        if (isspace((unsigned char)*r)) {
            space = w != s;
            continue;
        }
        if (space)
            *w++ = ' ';
        space = false;
        *w++ = *r;
    }
    *w = '\0';
}

/* The "## Task" section of a bridge prompt (up to the next "## " heading), else all of s. */
static char *task_section(const char *s)
{
    const char *t = strstr(s, "## Task\n");
    if (t == NULL || (t != s && t[-1] != '\n'))
        return xstrdup(s);
    t += strlen("## Task\n");
    const char *end = strstr(t, "\n## ");
    size_t n = end ? (size_t)(end - t) : strlen(t);
    char *out = malloc(n + 1);
    if (out == NULL)
        abort();
    memcpy(out, t, n);
    out[n] = '\0';
    return out;
}

void plan_parse(struct plan *p, const char *text, double scale)
{
    struct sb clean = {0};

    memset(p, 0, sizeof(*p));
    if (scale < 0)
        scale = 0;
    p->delay_ms = (long)llround(PLAN_DEFAULT_DELAY_MS * scale);
    if (text == NULL)
        text = "";
    for (const char *s = text; *s;) {
        const char *next = *s == '[' ? directive(p, s, scale) : NULL;
        if (next) {
            sb_adds(&clean, " ");
            s = next;
        } else {
            sb_add(&clean, s, 1);
            s++;
        }
    }
    char *all = sb_take(&clean);
    p->task = task_section(all);
    free(all);
    collapse_ws(p->task);
}

void plan_cleanup(struct plan *p)
{
    free(p->fail_msg);
    free(p->approval);
    free(p->approval2);
    free(p->text);
    free(p->task);
    memset(p, 0, sizeof(*p));
}

/* ---- the demo agent's answer ---- */

/* Arithmetic: + - * / ^ and parentheses over decimal numbers, by recursive descent. */
struct calc {
    const char *s;
    bool bad;
};

static double calc_sum(struct calc *c);

static void calc_ws(struct calc *c)
{
    while (*c->s == ' ')
        c->s++;
}

static double calc_atom(struct calc *c)
{
    calc_ws(c);
    if (*c->s == '(') {
        c->s++;
        double v = calc_sum(c);
        calc_ws(c);
        if (*c->s != ')')
            c->bad = true;
        else
            c->s++;
        return v;
    }
    if (*c->s == '-') {
        c->s++;
        return -calc_atom(c);
    }
    if (!isdigit((unsigned char)*c->s) && *c->s != '.') {
        c->bad = true;
        return 0;
    }
    char *end;
    double v = strtod(c->s, &end);
    if (end == c->s)
        c->bad = true;
    c->s = end;
    return v;
}

static double calc_pow(struct calc *c)
{
    double v = calc_atom(c);
    calc_ws(c);
    if (*c->s == '^') {
        c->s++;
        v = pow(v, calc_pow(c));
    }
    return v;
}

static double calc_product(struct calc *c)
{
    double v = calc_pow(c);
    for (;;) {
        calc_ws(c);
        char op = *c->s;
        if (op != '*' && op != '/' && op != 'x')
            return v;
        c->s++;
        double r = calc_pow(c);
        if (op == '/' && r == 0)
            c->bad = true;
        v = op == '/' ? (r == 0 ? 0 : v / r) : v * r;
    }
}

static double calc_sum(struct calc *c)
{
    double v = calc_product(c);
    for (;;) {
        calc_ws(c);
        char op = *c->s;
        if (op != '+' && op != '-')
            return v;
        c->s++;
        double r = calc_product(c);
        v = op == '+' ? v + r : v - r;
    }
}

/* If the task asks for a calculation ("what is 6 * 7?"), writes "6 * 7 = 42" into out. */
static bool arithmetic(const char *task, char *out, size_t outsz)
{
    static const char *const asks[] = {"what is ", "what's ",   "how much is ", "calculate ",
                                       "compute ", "evaluate ", "solve "};
    for (size_t k = 0; k < sizeof(asks) / sizeof(asks[0]); k++) {
        for (const char *t = strcasestr(task, asks[k]); t; t = strcasestr(t + 1, asks[k])) {
            const char *e = t + strlen(asks[k]);
            char expr[128];
            size_t n = 0;
            int ops = 0, digits = 0;
            for (; *e && n + 1 < sizeof(expr); e++) {
                char ch = *e == 'x' || *e == 'X' ? 'x' : *e;
                if (!strchr("0123456789.+-*/^() x", ch))
                    break;
                ops += strchr("+-*/^x", ch) != NULL;
                digits += isdigit((unsigned char)ch) != 0;
                expr[n++] = ch;
            }
            while (n > 0 && (expr[n - 1] == ' ' || expr[n - 1] == '.'))
                n--;
            expr[n] = '\0';
            if (ops == 0 || digits < 2)
                continue;
            struct calc c = {expr, false};
            double v = calc_sum(&c);
            calc_ws(&c);
            if (c.bad || *c.s != '\0' || !isfinite(v))
                continue;
            if (fabs(v) < 1e15 && v == floor(v))
                snprintf(out, outsz, "%s = %.0f", expr, v);
            else
                snprintf(out, outsz, "%s = %.10g", expr, v);
            return true;
        }
    }
    return false;
}

static bool greeting(const char *task)
{
    static const char *const hellos[] = {
        "hi", "hello", "hey", "good morning", "good afternoon", "good evening", "howdy"};
    if (strlen(task) > 40)
        return false;
    for (size_t k = 0; k < sizeof(hellos) / sizeof(hellos[0]); k++) {
        size_t n = strlen(hellos[k]);
        if (strncasecmp(task, hellos[k], n) == 0 && !isalnum((unsigned char)task[n]))
            return true;
    }
    return false;
}

/* Length of the longest prefix of s (at most max bytes) that ends on a UTF-8 boundary. */
static size_t utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

static char *summary(const char *task)
{
    char buf[512];
    struct sb b = {0};

    if (*task == '\0') {
        sb_adds(&b, "The task was empty, so there was nothing to do.");
    } else if (arithmetic(task, buf, sizeof(buf))) {
        sb_adds(&b, buf);
        sb_adds(&b, " (computed by the bundled demo agent).");
    } else if (greeting(task)) {
        sb_adds(&b, "Hello! This is the bundled demo agent (fake-agent). Send it a task and it "
                    "will acknowledge it; it can also do simple arithmetic, "
                    "e.g. \"what is 6 * 7\".");
    } else {
        size_t len = strlen(task), n = utf8_cut(task, len, 160);
        sb_adds(&b, "Demo agent received the task: \"");
        sb_add(&b, task, n);
        bool stop = n == len && n > 0 && strchr(".?!", task[n - 1]);
        sb_adds(&b, n < len ? "...\". " : stop ? "\" " : "\". ");
        sb_adds(&b, "This bundled demo agent (fake-agent) only acknowledges tasks and does simple "
                    "arithmetic; connect a real Hermes Agent for real work.");
    }
    return sb_take(&b);
}

char *plan_answer(const struct plan *p)
{
    if (p->text && p->repeat > 1) {
        struct sb b = {0};
        for (long i = 0; i < p->repeat; i++)
            sb_adds(&b, p->text);
        return sb_take(&b);
    }
    if (p->text)
        return xstrdup(p->text);
    char *s = summary(p->task);
    json_t *o = json_pack("{s:s, s:s, s:[], s:[]}", "status", "completed", "summary", s,
                          "artifacts", "next_steps");
    free(s);
    if (o == NULL) /* the summary was not valid UTF-8: cannot happen with a cut at a boundary */
        return xstrdup("{\"status\": \"completed\", \"summary\": \"\", \"artifacts\": [], "
                       "\"next_steps\": []}");
    char *js = json_dumps(o, p->json_fence ? JSON_INDENT(2) : 0);
    json_decref(o);
    if (!p->json_fence)
        return js;
    struct sb b = {0};
    sb_adds(&b, "Done. Here is the result:\n\n```json\n");
    sb_adds(&b, js);
    sb_adds(&b, "\n```\n");
    free(js);
    return sb_take(&b);
}

char *plan_partial_text(const char *answer)
{
    size_t len = strlen(answer);
    size_t n = utf8_cut(answer, len, len / 2);
    size_t w = n;
    while (w > 0 && answer[w - 1] != ' ')
        w--;
    if (w > n / 2)
        n = w;
    char *out = malloc(n + 1);
    if (out == NULL)
        abort();
    memcpy(out, answer, n);
    out[n] = '\0';
    return out;
}

/* ---- tools and timeline ---- */

void plan_tool(const struct plan *p, int index, struct plan_tool *out)
{
    static const char *const names[] = {"web_search", "terminal", "read_file", "write_file"};
    static const char *const emojis[] = {"\xF0\x9F\x94\x8D", "\xF0\x9F\x92\xBB", "\xF0\x9F\x93\x96",
                                         "\xE2\x9C\x8D\xEF\xB8\x8F"};
    int k = index % 4;
    out->name = names[k];
    out->emoji = emojis[k];
    switch (k) {
    case 0: {
        size_t len = strlen(p->task), n = utf8_cut(p->task, len, 60);
        snprintf(out->label, sizeof(out->label), "web_search: \"%.*s\"", (int)n, p->task);
        break;
    }
    case 1:
        snprintf(out->label, sizeof(out->label), "terminal: ls -la (step %d)", index + 1);
        break;
    case 2:
        snprintf(out->label, sizeof(out->label), "read_file: README.md");
        break;
    default:
        snprintf(out->label, sizeof(out->label), "write_file: notes-%d.md", index + 1);
        break;
    }
}

struct plan_step *plan_timeline(const struct plan *p, const char *out, size_t out_len, size_t *n)
{
    int tools = p->progress;
    size_t pieces = out_len == 0 ? 0 : (out_len < 4 ? out_len : 4);
    size_t cap = (size_t)tools * 2 + pieces + 1;
    struct plan_step *st = calloc(cap, sizeof(*st));
    size_t k = 0;
    double d = (double)p->delay_ms, seg = d / (tools + 1);

    if (st == NULL)
        abort();
    for (int i = 0; i < tools; i++) {
        st[k++] = (struct plan_step){.at_ms = lround(seg * i), .kind = STEP_TOOL_START, .tool = i};
        st[k++] =
            (struct plan_step){.at_ms = lround(seg * (i + 1)), .kind = STEP_TOOL_DONE, .tool = i};
    }
    size_t off = 0;
    for (size_t i = 0; i < pieces && off < out_len; i++) {
        size_t end = i + 1 == pieces ? out_len : out_len * (i + 1) / pieces;
        while (end < out_len && ((unsigned char)out[end] & 0xC0) == 0x80)
            end++;
        if (end <= off)
            continue;
        long at = lround(seg * tools + seg * (double)(i + 1) / (double)pieces);
        st[k++] = (struct plan_step){.at_ms = at, .kind = STEP_DELTA, .off = off, .len = end - off};
        off = end;
    }
    st[k++] = (struct plan_step){.at_ms = p->delay_ms, .kind = STEP_END};
    *n = k;
    return st;
}

long plan_tokens(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return n == 0 ? 0 : (long)((n + 3) / 4);
}
