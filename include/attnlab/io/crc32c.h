/* crc32c.h — CRC-32C (Castagnoli), the checksum of checkpoint tensor data.
 *
 * Why CRC-32C: it detects every single flipped bit and every burst of errors up to
 * 32 bits long, lets other corruption through with probability about 2^-32, is the
 * checksum of iSCSI, ext4 and Btrfs (other tools can verify our files), and a
 * table-driven version runs at over 1 GB/s: a checkpoint of tens of MB costs
 * milliseconds.
 *
 * Parameters: reflected polynomial 0x82F63B78, initial value and final XOR
 * 0xFFFFFFFF; crc32c(0, "123456789", 9) == 0xE3069283 (the standard check value).
 * Implemented here (slicing-by-8: eight 256-entry tables, eight bytes a round)
 * because attnlab depends on nothing but OpenBLAS and cJSON. */
#ifndef ATTNLAB_IO_CRC32C_H
#define ATTNLAB_IO_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of the n bytes at data appended to bytes whose CRC-32C was crc:
 * start with 0, and crc32c(crc32c(0, a, na), b, nb) is the checksum of a then b.
 * data may be NULL when n is 0.  Thread-safe. */
uint32_t crc32c(uint32_t crc, const void *data, size_t n);

#endif
