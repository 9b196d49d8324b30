/* dynsyms.c — see dynsyms.h. */
#include "dynsyms.h"

#include <dlfcn.h>
#include <string.h>

const char *dynsyms_bind(void *handle, void *table, const struct dynsym *syms, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        void *p = dlsym(handle, syms[i].name);
        if (p == NULL)
            return syms[i].name;
        /* dlsym returns void *; ISO C has no conversion to a function pointer, POSIX guarantees
         * the representation is the same, so the bytes are copied. */
        memcpy((char *)table + syms[i].offset, &p, sizeof p);
    }
    return NULL;
}
