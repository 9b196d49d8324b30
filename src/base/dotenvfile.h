/* dotenvfile.h — an env file read whole (capped, never blocking: readfile.h) and parsed as
 * KEY=VALUE lines (dotenv.h): the server's settings and the gateway file's placeholders come
 * from it. */
#ifndef HM_DOTENVFILE_H
#define HM_DOTENVFILE_H
#include <jansson.h>
#include <stddef.h>

/* A new object of the file's KEY=VALUE pairs and its mode bits in *mode, or NULL with a
 * one-line reason naming the file (and the line) in err. The file's text is wiped after
 * parsing: it may hold a secret. */
json_t *dotenvfile_read(const char *path, unsigned *mode, char *err, size_t errlen);

#endif
