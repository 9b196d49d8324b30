/* contractfile.c — the contract the agent is told to answer by: HERMES_CONTRACT_PATH, re-read
 * when the file changes (an unusable file keeps the previous one, else the built-in text), and
 * its JSON-string form, cached because escaping it for every request cost more than the rest of
 * the request body. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bridge_internal.h"
#include "contract.h"
#include "log.h"
#include "mem.h"
#include "readfile.h"

/* ---------- contract ---------- */

const char *contract_text(struct bridge *b)
{
    struct stat st;
    const char *path = b->opts.contract_path;

    if (path == NULL)
        return contract_default;
    if (stat(path, &st) < 0) {
        log_warn("HERMES_CONTRACT_PATH %s: %s; using the %s contract", path, strerror(errno),
                 b->contract ? "previous" : "built-in");
        return b->contract ? b->contract : contract_default;
    }
    if (!S_ISREG(st.st_mode)) {
        /* A FIFO or a device would block the event loop in fopen() or fread(). */
        log_warn("HERMES_CONTRACT_PATH %s is not a regular file; using the %s contract", path,
                 b->contract ? "previous" : "built-in");
        return b->contract ? b->contract : contract_default;
    }
    if (b->contract && st.st_mtim.tv_sec == b->contract_mtime.tv_sec &&
        st.st_mtim.tv_nsec == b->contract_mtime.tv_nsec && st.st_size == b->contract_size)
        return b->contract;
    if (st.st_size > CONTRACT_MAX) {
        log_warn("HERMES_CONTRACT_PATH %s is larger than 256 KiB; using the %s contract", path,
                 b->contract ? "previous" : "built-in");
        return b->contract ? b->contract : contract_default;
    }
    /* Read through the capped reader: the file may have been swapped for a FIFO since stat. */
    char err[300];
    size_t n;
    char *text =
        readfile_capped(path, "HERMES_CONTRACT_PATH", CONTRACT_MAX, &st, &n, err, sizeof err);
    if (text == NULL) {
        log_warn("%s; using the %s contract", err, b->contract ? "previous" : "built-in");
        return b->contract ? b->contract : contract_default;
    }
    char why[100];
    if (!contract_text_ok(text, n, why, sizeof why)) {
        /* Invalid UTF-8 cannot go into the JSON request at all. */
        log_warn("HERMES_CONTRACT_PATH %s: %s; %s", path, why,
                 b->contract ? "keeping the previous one" : "using the built-in contract");
        free(text);
        return b->contract ? b->contract : contract_default;
    }
    free(b->contract);
    b->contract = text;
    b->contract_gen++;
    b->contract_mtime = st.st_mtim;
    b->contract_size = st.st_size;
    log_info("contract loaded from %s", path);
    return b->contract;
}

/* The contract as a JSON string: escaping it for every request cost more than the rest of the
 * body; it only changes when the file does. */
const char *contract_json(struct bridge *b)
{
    const char *text = contract_text(b);
    if (b->contract_json == NULL || b->contract_json_of != text ||
        b->contract_json_gen != b->contract_gen) {
        json_t *s = json_string(text);
        free(b->contract_json);
        b->contract_json = s ? json_dumps(s, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        if (b->contract_json == NULL)
            b->contract_json = xstrdup("\"\"");
        json_decref(s);
        b->contract_json_of = text;
        b->contract_json_gen = b->contract_gen;
    }
    return b->contract_json;
}
