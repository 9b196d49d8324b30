/* siphash.c — SipHash-2-4, written from the paper ("SipHash: a fast short-input PRF"): 2
 * compression rounds per 8-byte word, 4 finalization rounds, 64-bit output. */
#include "siphash.h"

#include <string.h>

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static uint64_t load_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

struct sip {
    uint64_t v0, v1, v2, v3;
};

static void round_(struct sip *s)
{
    s->v0 += s->v1;
    s->v1 = ROTL(s->v1, 13);
    s->v1 ^= s->v0;
    s->v0 = ROTL(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = ROTL(s->v3, 16);
    s->v3 ^= s->v2;
    s->v0 += s->v3;
    s->v3 = ROTL(s->v3, 21);
    s->v3 ^= s->v0;
    s->v2 += s->v1;
    s->v1 = ROTL(s->v1, 17);
    s->v1 ^= s->v2;
    s->v2 = ROTL(s->v2, 32);
}

static void compress(struct sip *s, uint64_t m)
{
    s->v3 ^= m;
    round_(s);
    round_(s);
    s->v0 ^= m;
}

uint64_t siphash24(const void *data, size_t len, const uint8_t key[16])
{
    const uint8_t *p = data;
    uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
    struct sip s = {k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
                    k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull};
    size_t whole = len - len % 8;

    for (size_t i = 0; i < whole; i += 8)
        compress(&s, load_le64(p + i));
    /* The last word: the remaining bytes, and the length's low byte on top. */
    uint8_t tail[8] = {0};
    memcpy(tail, p + whole, len % 8);
    tail[7] = (uint8_t)len;
    compress(&s, load_le64(tail));
    s.v2 ^= 0xff;
    for (int i = 0; i < 4; i++)
        round_(&s);
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
