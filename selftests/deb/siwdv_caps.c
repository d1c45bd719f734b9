// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * siwdv_caps - suite "deb": built in the test VM against the installed
 * siwx-rdma-core package (its pkg-config, its siwdv.h and libsiw), as a
 * user's program would be. Opens DEVICE, prints what siwdv_query_device()
 * reports and exits 0 when the device offers immediate data and the
 * RFC 7306 atomics (so the siwx provider and the siwx module are in use),
 * 1 otherwise, 2 on a usage or open error.
 */
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <infiniband/siwdv.h>

int main(int argc, char **argv)
{
	struct siwdv_device_attr attr;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n, rc;

	if (argc != 2) {
		fprintf(stderr, "usage: siwdv_caps DEVICE\n");
		return 2;
	}
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "siwdv_caps: cannot open %s\n", argv[1]);
		return 2;
	}
	memset(&attr, 0, sizeof(attr));
	rc = siwdv_query_device(ctx, &attr, sizeof(attr));
	printf("siwdv_query_device: %d device_caps 0x%llx max_write_imm_sge %u\n",
	       rc, (unsigned long long)attr.device_caps,
	       attr.max_write_imm_sge);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return !(rc == 0 && (attr.device_caps & SIWDV_DEVICE_CAP_IMM_DATA) &&
		 (attr.device_caps & SIWDV_DEVICE_CAP_ATOMIC));
}
