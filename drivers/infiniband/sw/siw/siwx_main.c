// SPDX-License-Identifier: GPL-2.0 or BSD-3-Clause

/*
 * siwx: identification of the siw module built by the siwx project.
 *
 * SIWX_VERSION is passed in by the build (see Kbuild). Together with the
 * srcversion modpost computes over the sources, it lets a test prove that
 * the module loaded in a VM is the one just built:
 * /sys/module/siw/version and /sys/module/siw/srcversion must equal what
 * modinfo reports for build/siwx/siw.ko.
 */

#include <linux/module.h>

MODULE_VERSION(SIWX_VERSION);
MODULE_INFO(siwx, "siwx " SIWX_VERSION);
