// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mpa-peer: the FPDU CRC, CRC32c (Castagnoli) in software, as MPA uses it
 * (RFC 5044 section 4.4, RFC 3385): reflected, initial value all ones,
 * final complement.
 */
#include "mpa-peer.h"

static uint32_t crc_table[256];

void crc32c_init(void)
{
	uint32_t c;
	int i, k;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ SIWX_MPA_CRC32C_POLY : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = SIWX_MPA_CRC32C_INIT;

	while (n--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ SIWX_MPA_CRC32C_XOROUT;
}

/*
 * The CRC field carries the CRC32c in the byte order of RFC 3385/iSCSI:
 * least significant byte first (what the kernel's crc32c shash emits).
 */
void put_crc(uint8_t *p, uint32_t c)
{
	p[0] = c;
	p[1] = c >> 8;
	p[2] = c >> 16;
	p[3] = c >> 24;
}

uint32_t get_crc(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}
