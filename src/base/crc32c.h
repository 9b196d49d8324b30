/* crc32c.h — CRC-32C (Castagnoli), the checksum of records that must tell a torn or stale write
 * from a whole one (the task journal). Software, table-driven; not for secrets. */
#ifndef HM_CRC32C_H
#define HM_CRC32C_H
#include <stddef.h>
#include <stdint.h>

/* Continues crc over n bytes of p; start with crc = 0. crc32c(0, "123456789", 9) == 0xe3069283. */
uint32_t crc32c(uint32_t crc, const void *p, size_t n);

#endif
