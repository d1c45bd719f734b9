#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rsockets_upstream.sh - suite rsockets_upstream: rsockets.sh's fallback
# cases, for a VM booted with the unmodified upstream siw module (run.sh
# does that boot): our rsockets on both ends must keep to the send path
# and pass the data intact.
export SIWX_RSOCKETS_MODE=upstream
exec "$(dirname "$0")/rsockets.sh" "$@"
