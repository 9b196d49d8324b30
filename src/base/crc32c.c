/* crc32c.c — CRC-32C, reflected polynomial 0x82f63b78, one table of 256 built on first use. */
#include "crc32c.h"

#include <pthread.h>

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        table[i] = c;
    }
}

uint32_t crc32c(uint32_t crc, const void *p, size_t n)
{
    const unsigned char *b = p;
    pthread_once(&table_once, table_init);
    crc = ~crc;
    while (n--)
        crc = table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
    return ~crc;
}
