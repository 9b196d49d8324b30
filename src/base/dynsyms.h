/* dynsyms.h — a table of function pointers filled from a library opened with dlopen: the
 * optional libraries (libcurl, libpq) are loaded only by the features that use them. */
#ifndef HM_DYNSYMS_H
#define HM_DYNSYMS_H
#include <stddef.h>

/* One function: its name in the library, and where its pointer goes in the caller's table. */
struct dynsym {
    const char *name;
    size_t offset;
};
#define DYNSYM(table_type, field, name)                                                            \
    {                                                                                              \
        name, offsetof(table_type, field)                                                          \
    }

/* Stores the address of each of syms[0..n) at its offset in table (a struct of function
 * pointers). Returns NULL, or the name of the first function the library lacks (the table is
 * then partly filled and must not be used). */
const char *dynsyms_bind(void *handle, void *table, const struct dynsym *syms, size_t n);

#endif
