// crc32.h: CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), the checksum of the model file,
// the training state and the token cache; the same value as zlib's crc32().
// defines: sk_crc32
#ifndef SHAKESPEARE_CRC32_H
#define SHAKESPEARE_CRC32_H

#include <stddef.h>
#include <stdint.h>

// CRC-32 of n bytes at data, continued from crc (0 to start).
uint32_t sk_crc32(uint32_t crc, const void *data, size_t n);

#endif
