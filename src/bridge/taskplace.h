/* taskplace.h — where the file system puts new task directories: a placement hint on the tasks
 * root, so that creating a task does not depend on what was deleted near it (taskplace.c). */
#ifndef HM_TASKPLACE_H
#define HM_TASKPLACE_H
#include <stdbool.h>

/* Marks dir as the top of a hierarchy (FS_TOPDIR_FL) unless it is already: ext4 then spreads
 * its sub-directories over the disk's groups. True when dir carries the mark afterwards; false
 * where the file system has no such flag (tmpfs) or refuses it, which changes nothing else. */
bool taskplace_spread(const char *dir);

#endif
