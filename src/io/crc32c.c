/* crc32c.c — see crc32c.h.
 *
 * Slicing-by-8: table[0][b] is the CRC register after shifting byte b through it,
 * and table[k][b] the same followed by k zero bytes.  A round XORs eight input
 * bytes into the register and looks each of the eight bytes of the result up in
 * the table for "how many bytes still follow it in this round", so the bit-serial
 * recurrence costs eight loads and XORs per eight bytes. */
#include "attnlab/io/crc32c.h"

#include <pthread.h>

#define POLY 0x82F63B78u   /* 0x1EDC6F41 bit-reversed (the LSB-first form) */

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void) {
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table[0][b] = c;
    }
    for (int k = 1; k < 8; k++)
        for (int b = 0; b < 256; b++)
            table[k][b] = (table[k - 1][b] >> 8) ^ table[0][table[k - 1][b] & 0xFF];
}

/* The next 8 bytes as a little-endian word, whatever the host's byte order
 * (compilers turn this into one load on little-endian machines). */
static uint64_t load_le64(const unsigned char *p) {
    uint64_t w = 0;
    for (int i = 7; i >= 0; i--) w = w << 8 | p[i];
    return w;
}

uint32_t crc32c(uint32_t crc, const void *data, size_t n) {
    pthread_once(&table_once, table_init);
    const unsigned char *p = data;
    uint32_t c = ~crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w = load_le64(p) ^ c;
        c = table[7][w & 0xFF] ^ table[6][(w >> 8) & 0xFF] ^ table[5][(w >> 16) & 0xFF] ^
            table[4][(w >> 24) & 0xFF] ^ table[3][(w >> 32) & 0xFF] ^ table[2][(w >> 40) & 0xFF] ^
            table[1][(w >> 48) & 0xFF] ^ table[0][w >> 56];
    }
    for (; n > 0; n--, p++) c = (c >> 8) ^ table[0][(c ^ *p) & 0xFF];
    return ~c;
}
