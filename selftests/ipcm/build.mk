# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suite ipcm_rxe (included by selftests/Makefile)
PROGS += ipcm_conn
ipcm_conn_SRCS := ipcm/ipcm_conn.c
