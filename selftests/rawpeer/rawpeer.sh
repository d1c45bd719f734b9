#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rawpeer.sh - frames no real peer produces. TAP output. Single-VM topology.
#
#   rawpeer.sh [-l] [NAME-REGEX]
#
# Each case starts raw_server (rdma_cm listener on SIWX_ADDR0/siw0 with one
# MR, a guard page on each side, all filled with a pattern) and drives
# tools/mpa-peer (a user-space iWARP peer over plain TCP) against it with
# the frames the case crafts. It asserts:
#   - what came back: the Terminate's Layer/EType/Error Code (RFC 5040
#     numbers) and the headers it carries, or the expected responses;
#   - that the connection was torn down after a Terminate and nothing
#     followed it;
#   - raw_server: the whole area byte for byte as expected (unchanged
#     unless the case says otherwise), no receive completed successfully
#     after a refused frame;
#   - the kernel survived: the next case connects again, and the last test
#     (rawpeer.kernel_clean) finds no Oops/WARNING/BUG in dmesg and the
#     device still answering.
# Expected Terminates are those of Documentation/rfc7306.md and
# inbound-checks.md. Immediate Data cases are reported as TODO (never as a
# pass) when the module does not report SIW_CAP_IMM_DATA; cases where
# raw_server must post an atomic are skipped when libsiw cannot post one.
#
# Environment: SIWX_BIN (raw_server), SIWX_MPA_PEER (mpa-peer binary,
# default: the one SIWX_BIN's build made), SIWX_ADDR0, SIWX_NETNS1, SIWX_RESULTS (logs go
# to SIWX_RESULTS/rawpeer/), SIWX_RAWPEER_PORT (first TCP port, 41000),
# SIWX_RAWPEER_JOBS (cases run at a time, each on its own port: 3; the
# kernel-problem attribution then names the case started last).
#
# Process creation is slow under TCG: the checks use bash builtins only.

# ${...} in single quotes are for mpa-peer, not the shell:
# shellcheck disable=SC2016

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BIN=${SIWX_BIN:-$TOP/build/selftests/bin}
PEER=${SIWX_MPA_PEER:-${BIN%/selftests/bin}/tools/mpa-peer/mpa-peer}	# the same build's
A0=${SIWX_ADDR0:-192.168.77.1}
# the peer in siw1's namespace when it has one (tools/vm/run --netns): its
# TCP connection then crosses the veth pair instead of lo
IN_NS=()
[ -z "${SIWX_NETNS1:-}" ] || IN_NS=(ip netns exec "$SIWX_NETNS1")
OUT=${SIWX_RESULTS:-${TMPDIR:-/tmp}}/rawpeer
PORT=${SIWX_RAWPEER_PORT:-41000}
JOBS=${SIWX_RAWPEER_JOBS:-3}
# KERNEL_PROBLEMS: the one definition of a kernel problem line
# shellcheck source=../../tools/vm/kernel-problems.sh
. "$TOP/tools/vm/kernel-problems.sh"
# SIWX_*: the numbers of include/siwx/wire.h, for the expectations
# shellcheck source=../lib/siwx_wire.sh
. "$TOP/selftests/lib/siwx_wire.sh" || { echo "Bail out! cannot read wire.h"; exit 1; }

# ---------------------------------------------------------------- cases
#
# tc NAME 'SERVER-ARGS' 'PEER-OPTIONS' 'EXPECT' STEP...
#
# SERVER-ARGS: raw_server options (besides --port). PEER-OPTIONS: mpa-peer
# options. STEPs: mpa-peer steps; mpa-peer fills in ${rkey}, ${addr},
# ${len} (raw_server's private data), ${ird}/${ord} (MPA Reply) and
# ${rx_*} (last FPDU received). EXPECT, blank separated:
#   term=L/E/C    exactly one Terminate, with these Layer/EType/Code
#   noterm        no Terminate
#   hdrs=X        the Terminate's M/D/R flags (MDR, MD, -)
#   rx:REGEX      some 'rx ...' line of mpa-peer matches (bash regex)
#   peer:REGEX    some line of mpa-peer's output matches
#   !peer:REGEX   no line of mpa-peer's output matches
#   srv:REGEX     some 'server ...' line matches (without 'server ')
#   !srv:REGEX    no 'server ...' line matches
#   srv<:RE1<RE2  a 'server ...' line matching RE1 comes before any that
#                 matches RE2 (which need not come at all)
#   qp-err        the responder QP is in ERR at the end, with every posted
#                 receive completed (flushed if not consumed)
#   recv-ok       allow successful receive completions before a Terminate
#   noconn        the responder must not accept a connection
#   needs=imm     Immediate Data: TODO when the module lacks it
#   needs=post    raw_server posts an atomic: SKIP if libsiw cannot
NAMES=() SARGS=() POPTS=() EXPS=() STEPS=()
tc() {
	local IFS=$'\x1f'

	NAMES+=("$1") SARGS+=("$2") POPTS+=("$3") EXPS+=("$4")
	shift 4
	STEPS+=("$*")
}

AT='stag=${rkey} to=${addr}'
V0=0x1122334455667788
V1=0x00000000000000ff
FLUSHED='cqe.cq=recv.wr_id=103.status=Work.Request.Flushed.Error'

# --- the tool itself: MPA handshake, CRC, plain operations
tc mpa.crc_on.send_write "--expect-hex 16=a1b2c3d4e5" "--crc" \
	"noterm peer:^reply.*c=1 srv:cqe.cq=recv.wr_id=100.status=success.*byte_len=5.*data=0011223344" \
	'send data=0011223344' "write stag=\${rkey} to=\${addr}+16 data=a1b2c3d4e5"
tc mpa.crc_off.send_write "--expect-hex 16=a1b2c3d4e5" "--no-crc" \
	"noterm peer:^reply.*c=0 srv:cqe.cq=recv.wr_id=100.status=success.*byte_len=5.*data=0011223344" \
	'send data=0011223344' "write stag=\${rkey} to=\${addr}+16 data=a1b2c3d4e5"
tc mpa.rev1 "" "--rev 1" \
	"noterm peer:^reply.rev=1.*s=0 srv:cqe.cq=recv.wr_id=100.status=success.*data=00" \
	'send data=00'
tc mpa.read_response "" "" \
	"noterm rx:opcode=0x2.read_resp.*stag=0x00001234.to=0x8.*payload=16.*crc=ok" \
	"read_req sink_stag=0x1234 sink_to=8 size=16 src_stag=\${rkey} src_to=\${addr}" 'rx ms=5000 until=2'
tc mpa.p2p_write_rtr "" "--p2p --rtr write" \
	"noterm peer:^reply.*a=1.*c_rtr=1 peer:^rtr.sent=write srv:cqe.cq=recv.wr_id=100.status=success.*data=77" \
	'send data=77'
tc mpa.p2p_read_rtr "" "--p2p --rtr read" \
	"noterm peer:^reply.*a=1.*d_rtr=1 peer:^rtr.sent=read rx:opcode=0x2.read_resp srv:cqe.cq=recv.wr_id=100.status=success.*data=78" \
	'send data=78'
# What the responder's socket holds when its QP takes the socket over is
# processed then (patch 0024), not left until more data comes: an FPDU
# that arrives between the MPA Reply and the takeover (a race, storage
# ULPs send right after ESTABLISHED) is placed the same way as this Send,
# written before the Reply while raw_server waits 1.5 s to accept. Upstream
# siw completes it only when the peer's FIN comes, after DISCONNECTED.
tc mpa.data_before_takeover "--accept-delay 1500" "--early 1 --delay 300" \
	"noterm peer:^early.steps.sent srv:accept-delay srv:cqe.cq=recv.wr_id=100.status=success.*byte_len=3.*data=5a5b5c srv<:cqe.cq=recv.wr_id=100.status=success<cm-event.event=RDMA_CM_EVENT_DISCONNECTED" \
	'send data=5a5b5c'
tc mpa.markers_rejected "--timeout 5000" "--markers" \
	"noconn peer:^reply.*r=1 peer:^closed"
tc mpa.rev3_refused "--timeout 5000" "--rev 3" \
	"noconn !peer:^reply.*r=0"

# --- regressions: upstream fixes and long-standing checks
# opcodes siwx does not know: 0x12 (SIWX_RDMAP_OP_COUNT) to 0x1f
for op in 0x12 0x13 0x17 0x1b 0x1f; do
	tc "rdmap.opcode_$op" "" "" "term=0/2/0x06" "untagged opcode=$op qn=0 data=00112233"
done
tc rdmap.version_0 "" "" "term=0/2/0x05" 'send data=00 rv=0'
tc rdmap.version_2 "" "" "term=0/2/0x05" 'send data=00 rv=2'
tc ddp.version_0_untagged "" "" "term=1/2/0x06" 'send data=00 dv=0'
tc ddp.version_0_tagged "" "" "term=1/1/0x04" "write $AT data=00 dv=0"
# The DDP Tagged flag must be the opcode's (patch 0040; upstream siw reads
# the header by the opcode alone and takes the message): a Send flagged
# tagged, an RDMA Write flagged untagged (not placed).
tc ddp.send_tagged "" "" "term=0/2/0x06" 'send data=0011223344 t=1'
tc ddp.write_untagged "" "" "term=0/2/0x06" "write $AT data=a1b2c3d4 t=0"
tc mpa.bad_crc "" "--crc" "term=2/0/0x02" 'send data=00 crc=bad'
# With MPA CRC an FPDU is placed only once its CRC checked out (patch
# 0032): a corrupted RDMA Write leaves the target as it was (upstream siw
# places the payload first and finds the CRC error at the end), and of a
# Write in two segments only the good first one is placed.
tc mpa.bad_crc_write_not_placed "" "--crc" "term=2/0/0x02" \
	"write $AT data=a1b2c3d4e5f60718 crc=bad"
tc mpa.bad_crc_second_segment_not_placed "--expect-hex 0=a1a2a3a4" "--crc" "term=2/0/0x02" \
	"write $AT data=a1a2a3a4 l=0" "write stag=\${rkey} to=\${addr}+4 data=b1b2b3b4 crc=bad"
tc mpa.short_len.send "" "" "term=2/0/0x03" 'send data=0011223344556677 mpalen=4'
tc mpa.short_len.read_req "" "" "term=2/0/0x03" \
	"read_req sink_stag=1 sink_to=0 size=8 src_stag=\${rkey} src_to=\${addr} mpalen=18"
tc mpa.short_len.atomic "" "" "term=2/0/0x03" "atomic $AT add=1 mpalen=30"
tc send.no_receive "--recv 0" "" "term=1/2/0x02 hdrs=MD" 'send data=00'
tc send.wrong_qn "" "" "term=1/2/0x01 hdrs=MD" 'send data=00 qn=5'
tc send.wrong_msn "" "" "term=1/2/0x03 hdrs=MD" 'send data=00 msn=7'
tc write.no_remote_write "--access lw,rr" "" "term=any" "write $AT data=00112233"
tc read_req.no_remote_read "--access lw,rw" "" "term=0/1/0x02 hdrs=MDR rx:att_opcode=0x1.att_qn=1" \
	"read_req sink_stag=1 sink_to=0 size=24 src_stag=\${rkey} src_to=\${addr}"
tc read_req.term_echoes_msn "--access lw,rw" "" "term=0/1/0x02 rx:att_opcode=0x1.att_qn=1.att_msn=1.att_mo=0" \
	"read_req sink_stag=1 sink_to=0 size=24 src_stag=\${rkey} src_to=\${addr}"
tc read_req.wrong_qn "" "" "term=1/2/0x01 hdrs=MD" \
	"read_req qn=0 sink_stag=1 sink_to=0 size=8 src_stag=\${rkey} src_to=\${addr}"
tc read_req.ird_exceeded "--ird 1 --ord 1" "--ird 1 --ord 1 --coalesce" \
	"term=0/2/0x07 peer:^reply.*ird=1" \
	"read_req sink_stag=1 sink_to=0 size=8 src_stag=\${rkey} src_to=\${addr} repeat=8"
# The responder's QP after a Terminate: in ERR, its receives flushed.
# rx_path: refused on receipt; tx_path: refused while building the response.
tc responder.qp_error_after_term.rx_path "" "" "term=1/2/0x01 qp-err" 'send data=00 qn=5'
tc responder.qp_error_after_term.tx_path "--access lw,rw" "" "term=0/1/0x02 qp-err" \
	"read_req sink_stag=1 sink_to=0 size=8 src_stag=\${rkey} src_to=\${addr}"
tc responder.qp_error_after_term.atomic "--access lw,rw,rr" "" "term=0/1/0x02 qp-err" \
	"atomic $AT add=1"

# --- RFC 7306 Atomic Requests (QN 1, MSN shared with Read Requests)
for aop in 1 3 15; do
	tc "atomic.aopcode_$aop" "--set-u64 0=$V0" "" \
		"term=0/2/0x06 hdrs=MDR rx:att_opcode=0xa.*att_aop=$aop.att_reqid=0x1" \
		"atomic aop=$aop $AT add=1 addmask=~0 cmp=1 cmpmask=~0"
done
tc atomic.qn_0 "--set-u64 0=$V0" "" "term=1/2/0x01 hdrs=MD" "atomic qn=0 $AT add=1"
tc atomic.qn_2 "--set-u64 0=$V0" "" "term=1/2/0x01 hdrs=MD" "atomic qn=2 $AT add=1"
tc atomic.qn_3 "--set-u64 0=$V0" "" "term=1/2/0x01 hdrs=MD" "atomic qn=3 $AT add=1"
tc atomic.wrong_msn "--set-u64 0=$V0" "" "term=1/2/0x03 hdrs=MD" "atomic msn=2 $AT add=1"
tc atomic.mo_nonzero "--set-u64 0=$V0" "" "term=1/2/0x04" "atomic mo=4 $AT add=1"
tc atomic.not_last "--set-u64 0=$V0" "" "term=1/2/0x04" "atomic l=0 $AT add=1"
tc atomic.with_payload "--set-u64 0=$V0" "" "term=1/2/0x05" \
	"atomic $AT add=1 data=0011223344556677"
tc atomic.misaligned "--set-u64 0=$V0" "" "term=0/2/0x07 hdrs=MDR rx:att_opcode=0xa" \
	"atomic stag=\${rkey} to=\${addr}+4 add=1"
tc atomic.invalid_stag_index "--set-u64 0=$V0" "" \
	"term=0/1/0x00 hdrs=MDR rx:att_opcode=0xa.*att_reqid=0x77" \
	"atomic reqid=0x77 stag=\${rkey}^0x100 to=\${addr} add=1"
tc atomic.invalid_stag_key "--set-u64 0=$V0" "" "term=0/1/0x00 hdrs=MDR rx:att_opcode=0xa" \
	"atomic stag=\${rkey}^0x1 to=\${addr} add=1"
tc atomic.bounds_end "--set-u64 0=$V0" "" "term=0/1/0x01 hdrs=MDR rx:att_opcode=0xa" \
	"atomic stag=\${rkey} to=\${addr}+\${len} add=1"
tc atomic.bounds_before "--set-u64 0=$V0" "" "term=0/1/0x01 hdrs=MDR rx:att_opcode=0xa" \
	"atomic stag=\${rkey} to=\${addr}-8 add=1"
tc atomic.bounds_wrap "--set-u64 0=$V0" "" "term=0/1/0x01 hdrs=MDR rx:att_opcode=0xa" \
	"atomic stag=\${rkey} to=0xfffffffffffffff8 add=1"
tc atomic.no_remote_atomic "--access lw,rw,rr --set-u64 0=$V0" "" \
	"term=0/1/0x02 hdrs=MDR rx:att_opcode=0xa" "atomic $AT add=1"
tc atomic.cmpswap_no_remote_atomic "--access lw,rw,rr --set-u64 0=$V0" "" \
	"term=0/1/0x02 hdrs=MDR rx:att_opcode=0xa.*att_aop=2" \
	"atomic aop=2 $AT cmp=$V0 cmpmask=~0 swap=0 swapmask=~0"
tc atomic.other_pd "--pd2 --set-u64 0=$V0" "" \
	"term=0/1/0x03 hdrs=MDR rx:att_opcode=0xa" "atomic $AT add=1"
tc atomic.ird_exceeded "--ird 1 --ord 1 --set-u64 0=$V0" "--ird 1 --ord 1 --coalesce" \
	"term=0/2/0x07 peer:^reply.*ird=1" "atomic $AT add=0 repeat=8"
tc atomic.response_unsolicited "" "" "term=1/2/0x02 hdrs=MD" 'atomic_resp reqid=1 value=0'
tc atomic.fetchadd "--set-u64 8=$V0 --expect-u64 8=$((V0 + 0x10101))" "" \
	"noterm rx:opcode=0xb.atomic_resp.*qn=3.msn=1.*reqid=0x5eed.value=0x1122334455667788" \
	"atomic aop=0 reqid=0x5eed stag=\${rkey} to=\${addr}+8 add=0x10101" 'rx ms=5000 until=0xb'
tc atomic.fetchadd_last_word "--set-u64 4088=$V0 --expect-u64 4088=$((V0 - 1))" "" \
	"noterm rx:opcode=0xb.*value=0x1122334455667788" \
	"atomic stag=\${rkey} to=\${addr}+\${len}-8 add=~0" 'rx ms=5000 until=0xb'
tc atomic.fetchadd_twice "--set-u64 0=$V0 --expect-u64 0=$((V0 + 3))" "" \
	"noterm rx:opcode=0xb.*qn=3.msn=1.*reqid=0x1.value=0x1122334455667788 rx:opcode=0xb.*qn=3.msn=2.*reqid=0x2.value=0x1122334455667789" \
	"atomic $AT add=1" 'rx ms=5000 until=0xb' "atomic $AT add=2" 'rx ms=5000 until=0xb'
tc atomic.after_read_msn "--set-u64 0=$V0 --expect-u64 0=$((V0 + 1))" "" \
	"noterm rx:opcode=0x2.read_resp rx:opcode=0xb.*qn=3.msn=1.*value=0x1122334455667788" \
	"read_req sink_stag=1 sink_to=0 size=8 src_stag=\${rkey} src_to=\${addr}+8" 'rx ms=5000 until=2' \
	"atomic $AT add=1" 'rx ms=5000 until=0xb'
tc atomic.fetchadd_masked "--set-u64 0=$V1 --expect-u64 0=0x0000000000000000" "" \
	"noterm rx:opcode=0xb.*value=0x00000000000000ff" \
	"atomic $AT add=1 addmask=0x80" 'rx ms=5000 until=0xb'
tc atomic.cmpswap_match "--set-u64 0=$V0 --expect-u64 0=0xaaaabbbbccccdddd" "" \
	"noterm rx:opcode=0xb.*reqid=0x9.value=0x1122334455667788" \
	"atomic aop=2 reqid=9 $AT cmp=$V0 cmpmask=~0 swap=0xaaaabbbbccccdddd swapmask=~0" 'rx ms=5000 until=0xb'
tc atomic.cmpswap_nomatch "--set-u64 0=$V0" "" \
	"noterm rx:opcode=0xb.*value=0x1122334455667788" \
	"atomic aop=2 $AT cmp=$((V0 + 1)) cmpmask=~0 swap=0 swapmask=~0" 'rx ms=5000 until=0xb'
tc atomic.cmpswap_masked "--set-u64 0=0x1111222233334444 --expect-u64 0=0xaaaa222233334444" "" \
	"noterm rx:opcode=0xb.*value=0x1111222233334444" \
	"atomic aop=2 $AT cmp=0x33330000 cmpmask=0xffff0000 swap=0xaaaaaaaaaaaaaaaa swapmask=0xffff000000000000" \
	'rx ms=5000 until=0xb'

# --- RFC 7306 Atomic Responses to a request raw_server posts
tc requester.fetchadd_response "--post-fadd 5" "" \
	"needs=post noterm rx:opcode=0xa.*aop=0.*astag=0x00001234.ato=0x1000.add=0x5 srv:cqe.cq=send.wr_id=1.status=success srv:result.u64=0x1122334455667788" \
	'rx ms=5000 until=0xa' "atomic_resp reqid=\${rx_reqid} value=$V0" 'rx ms=1000'
tc requester.cmpswap_response "--post-cswap 1:2" "" \
	"needs=post noterm rx:opcode=0xa.*aop=2.*add=0x2.*cmp=0x1 srv:cqe.cq=send.wr_id=1.status=success srv:result.u64=0x0000000000000001" \
	'rx ms=5000 until=0xa' 'atomic_resp reqid=${rx_reqid} value=1' 'rx ms=1000'
tc requester.response_wrong_reqid "--post-fadd 5" "" \
	"needs=post term=0/2/0x07 !srv:cqe.cq=send.*status=success srv:result.u64=0x5a5a5a5a5a5a5a5a" \
	'rx ms=5000 until=0xa' "atomic_resp reqid=\${rx_reqid}+1 value=$V0"
tc requester.response_wrong_msn "--post-fadd 5" "" \
	"needs=post term=1/2/0x03 !srv:cqe.cq=send.*status=success srv:result.u64=0x5a5a5a5a5a5a5a5a" \
	'rx ms=5000 until=0xa' "atomic_resp msn=2 reqid=\${rx_reqid} value=$V0"
tc requester.response_with_payload "--post-fadd 5" "" \
	"needs=post term=1/2/0x05 !srv:cqe.cq=send.*status=success srv:result.u64=0x5a5a5a5a5a5a5a5a" \
	'rx ms=5000 until=0xa' "atomic_resp reqid=\${rx_reqid} value=$V0 data=00112233"
# A Read Response that fails (here its MPA CRC) completes its Read in error;
# the Reads behind it complete flushed, not never (patch 0023). All three
# Reads have the same sink STag and offset, so the rx_ variables of the last
# Read Request received answer the first.
tc requester.read_resp_error_flushes_rest "--post-read 3" "--crc" \
	"srv:cqe.cq=send.wr_id=1.status= !srv:cqe.cq=send.wr_id=1.status=success srv:cqe.cq=send.wr_id=2.status=Work.Request.Flushed.Error srv:cqe.cq=send.wr_id=3.status=Work.Request.Flushed.Error" \
	'rx ms=5000 until=0x1' 'rx ms=1500' 'read_resp stag=${rx_sink_stag} to=${rx_sink_to} len=8 crc=bad' 'rx ms=1000'

# --- draft-talpey-rdma-commit-01: Flush (0xC/0xD), Atomic Write (0x10/0x11)
# (Documentation/flush.md). Every expectation is a wire.h name.
R=$SIWX_TERM_LAYER_RDMAP D=$SIWX_TERM_LAYER_DDP
T_STAG=$R/$SIWX_RDMAP_ETYPE_REMOTE_PROTECTION/$SIWX_RDMAP_ECODE_INVALID_STAG
T_BOUNDS=$R/$SIWX_RDMAP_ETYPE_REMOTE_PROTECTION/$SIWX_RDMAP_ECODE_BASE_BOUNDS
T_ACCESS=$R/$SIWX_RDMAP_ETYPE_REMOTE_PROTECTION/$SIWX_RDMAP_ECODE_ACCESS_RIGHTS
T_PD=$R/$SIWX_RDMAP_ETYPE_REMOTE_PROTECTION/$SIWX_RDMAP_ECODE_STAG_NOT_ASSOC
T_OPCODE=$R/$SIWX_RDMAP_ETYPE_REMOTE_OPERATION/$SIWX_RDMAP_ECODE_OPCODE
T_STREAM=$R/$SIWX_RDMAP_ETYPE_REMOTE_OPERATION/$SIWX_RDMAP_ECODE_CATASTROPHIC_STREAM
T_QN=$D/$SIWX_DDP_ETYPE_UNTAGGED_BUF/$SIWX_DDP_ECODE_UT_INVALID_QN
T_MSN=$D/$SIWX_DDP_ETYPE_UNTAGGED_BUF/$SIWX_DDP_ECODE_UT_INVALID_MSN_RANGE
T_NOBUF=$D/$SIWX_DDP_ETYPE_UNTAGGED_BUF/$SIWX_DDP_ECODE_UT_INVALID_MSN_NOBUF
T_MO=$D/$SIWX_DDP_ETYPE_UNTAGGED_BUF/$SIWX_DDP_ECODE_UT_INVALID_MO
T_LONG=$D/$SIWX_DDP_ETYPE_UNTAGGED_BUF/$SIWX_DDP_ECODE_UT_MSG_TOOLONG
# opcodes as mpa-peer prints them (0x%x)
printf -v O_FREQ 0x%x "$SIWX_RDMAP_OP_FLUSH_REQ"
printf -v O_FRESP 0x%x "$SIWX_RDMAP_OP_FLUSH_RESP"
printf -v O_AWREQ 0x%x "$SIWX_RDMAP_OP_ATOMIC_WRITE_REQ"
printf -v O_AWRESP 0x%x "$SIWX_RDMAP_OP_ATOMIC_WRITE_RESP"
printf -v O_ARESP 0x%x "$SIWX_RDMAP_OP_ATOMIC_RESP"
printf -v O_RRESP 0x%x "$SIWX_RDMAP_OP_READ_RESP"
Q1=$SIWX_DDP_QN_READ_REQ Q3=$SIWX_DDP_QN_ATOMIC_RESP M1=$SIWX_DDP_MSN_FIRST
# a response on QN 3 with its MSN: RESP OPCODE-HEX MSN
resp() { echo "rx:opcode=$1.*qn=$Q3.msn=$2.mo=0.*payload=0"; }
# the control bytes of a valid untagged last segment of opcode $1, with
# the RDMAP reserved bit set
ctrl_rsvd() {
	printf '0x%04x' $(((SIWX_DDP_FLAG_L | SIWX_DDP_VERSION) << 8 |
		SIWX_RDMAP_VERSION << SIWX_RDMAP_RV_SHIFT | SIWX_RDMAP_MASK_RSVD | $1))
}
FA="--access lw,rw,rr,ra,fg"			# the MR a Flush may target
FL='flush stag=${rkey} to=${addr}'
AW='awrite stag=${rkey} to=${addr}'
G=g=1 P='p=1 g=0' PG='p=1 g=1'
SEL_MR=sel=$SIWX_FLUSH_SEL_MR
W8=0x1122334455667788 W8HEX=1122334455667788	# value= goes on the wire big-endian
RX_FR="rx ms=5000 until=$SIWX_RDMAP_OP_FLUSH_RESP"
RX_AWR="rx ms=5000 until=$SIWX_RDMAP_OP_ATOMIC_WRITE_RESP"

# the reserved RDMAP bit left (0x20) on a message of each kind; Verify
# (known to the decoders, not implemented) is refused like any unknown opcode
tc rdmap.rsvd_bit.send "" "" "term=$T_OPCODE" "send data=00 ctrl=$(ctrl_rsvd "$SIWX_RDMAP_OP_SEND")"
tc rdmap.rsvd_bit.flush_req "$FA" "" "term=$T_OPCODE" \
	"$FL size=8 $G ctrl=$(ctrl_rsvd "$SIWX_RDMAP_OP_FLUSH_REQ")"
tc rdmap.rsvd_bit.atomic_write_req "" "" "term=$T_OPCODE" \
	"$AW value=$W8 ctrl=$(ctrl_rsvd "$SIWX_RDMAP_OP_ATOMIC_WRITE_REQ")"
tc rdmap.verify_req "$FA" "" "term=$T_OPCODE" \
	"untagged opcode=$SIWX_RDMAP_OP_VERIFY_REQ qn=$Q1 hdr=0000123400000008000000000000100000000000"
tc rdmap.verify_resp "" "" "term=$T_OPCODE" \
	"untagged opcode=$SIWX_RDMAP_OP_VERIFY_RESP qn=$Q3 data=00112233"

# Flush: valid requests (Writes before it placed, the response on QN 3)
tc flush.after_writes "$FA --expect-hex 0=0102030405060708 --expect-hex 4000=a1a2a3" "" \
	"noterm $(resp "$O_FRESP" "$M1")" \
	"write $AT data=0102030405060708" "write stag=\${rkey} to=\${addr}+4000 data=a1a2a3" \
	"$FL size=\${len} $G" "$RX_FR"
tc flush.sel_mr_after_write "$FA --expect-hex 16=77" "" \
	"noterm $(resp "$O_FRESP" "$M1") " \
	"write stag=\${rkey} to=\${addr}+16 data=77" "flush stag=\${rkey} to=0 size=0 $G $SEL_MR" "$RX_FR"
tc flush.sel_mr_ignores_range "$FA" "" "noterm $(resp "$O_FRESP" "$M1")" \
	"flush stag=\${rkey} to=0xfffffffffffffff0 size=0xffffffff $G $SEL_MR" "$RX_FR"
tc flush.needs_no_remote_rw "--access lw,fg" "" "noterm $(resp "$O_FRESP" "$M1")" \
	"$FL size=64 $G" "$RX_FR"
tc flush.zero_length "$FA" "" "noterm $(resp "$O_FRESP" "$M1")" "$FL size=0 $G" "$RX_FR"
tc flush.twice_msn "$FA" "" "noterm $(resp "$O_FRESP" "$M1") $(resp "$O_FRESP" $((M1 + 1)))" \
	"$FL size=8 $G" "$RX_FR" "$FL+8 size=8 $G" "$RX_FR"
tc flush.after_atomic_msn "$FA --set-u64 0=$V0 --expect-u64 0=$((V0 + 1))" "" \
	"noterm rx:opcode=$O_ARESP.*qn=$Q3.msn=$M1 $(resp "$O_FRESP" $((M1 + 1)))" \
	"atomic $AT add=1" "$FL size=8 $G" "$RX_FR"
tc flush.after_read_msn "$FA" "" "noterm rx:opcode=$O_RRESP.read_resp $(resp "$O_FRESP" "$M1")" \
	"read_req sink_stag=1 sink_to=0 size=8 src_stag=\${rkey} src_to=\${addr}" \
	"$FL size=8 $G" "$RX_FR"

# Flush: refused, the request's headers attached, nothing touched
FH="hdrs=MDR rx:att_opcode=$O_FREQ.att_qn=$Q1.att_msn=$M1.att_mo=0"
tc flush.invalid_stag_index "$FA" "" "term=$T_STAG $FH.*att_fstag=" \
	"flush stag=\${rkey}^0x100 to=\${addr} size=8 $G"
tc flush.invalid_stag_key "$FA" "" "term=$T_STAG $FH" "flush stag=\${rkey}^0x1 to=\${addr} size=8 $G"
tc flush.sel_mr_invalid_stag "$FA" "" "term=$T_STAG $FH" "flush stag=\${rkey}^0x1 to=0 size=0 $G $SEL_MR"
tc flush.other_pd "$FA --pd2" "" "term=$T_PD $FH" "$FL size=8 $G"
tc flush.bounds_end "$FA" "" "term=$T_BOUNDS $FH" "$FL+\${len}-8 size=16 $G"
tc flush.bounds_past_end "$FA" "" "term=$T_BOUNDS $FH" "$FL+\${len} size=1 $G"
tc flush.bounds_before "$FA" "" "term=$T_BOUNDS $FH" "$FL-8 size=16 $G"
tc flush.bounds_len "$FA" "" "term=$T_BOUNDS $FH" "$FL size=\${len}+1 $G"
tc flush.bounds_wrap "$FA" "" "term=$T_BOUNDS $FH" "flush stag=\${rkey} to=0xfffffffffffffff0 size=0x20 $G"
tc flush.no_flush_global "--access lw,rw,rr,ra" "" "term=$T_ACCESS $FH" "$FL size=8 $G"
tc flush.persistent_no_flush_persistent "$FA" "" "term=$T_ACCESS $FH" "$FL size=8 $P"
tc flush.persistent_global_no_flush_persistent "$FA" "" "term=$T_ACCESS $FH" "$FL size=8 $PG"
tc flush.disp_neither_p_nor_g "$FA" "" "term=$T_STREAM $FH" "$FL size=8 p=0 g=0"
# selectivity values other than RANGE and MR
for sel in 2 3; do
	tc "flush.selectivity_$sel" "$FA" "" "term=$T_STREAM $FH" "$FL size=8 $G sel=$sel"
done
for bit in 0x4 0x8 0x40 0x100 0x80000000; do
	tc "flush.disp_reserved_$bit" "$FA" "" "term=$T_STREAM $FH" "$FL size=8 $G drsvd=$bit"
done
tc flush.qn_0 "$FA" "" "term=$T_QN hdrs=MD" "$FL size=8 $G qn=$SIWX_DDP_QN_SEND"
tc flush.qn_3 "$FA" "" "term=$T_QN hdrs=MD" "$FL size=8 $G qn=$Q3"
tc flush.wrong_msn "$FA" "" "term=$T_MSN hdrs=MD" "$FL size=8 $G msn=$((M1 + 1))"
tc flush.mo_nonzero "$FA" "" "term=$T_MO" "$FL size=8 $G mo=4"
tc flush.not_last "$FA" "" "term=$T_MO" "$FL size=8 $G l=0"
tc flush.with_payload "$FA" "" "term=$T_LONG" "$FL size=8 $G data=00112233"
tc flush.ird_exceeded "$FA --ird 1 --ord 1" "--ird 1 --ord 1 --coalesce" \
	"term=$T_STREAM peer:^reply.*ird=1" "$FL size=8 $G repeat=8"
tc flush.response_unsolicited "" "" "term=$T_NOBUF hdrs=MD" 'flush_resp'

# Atomic Write: valid (exactly the 8 bytes placed, as they came)
tc awrite.valid "--expect-hex 8=$W8HEX" "" "noterm $(resp "$O_AWRESP" "$M1")" \
	"$AW+8 value=$W8" "$RX_AWR"
tc awrite.last_word "--expect-hex 4088=$W8HEX" "" "noterm $(resp "$O_AWRESP" "$M1")" \
	"$AW+\${len}-8 value=$W8" "$RX_AWR"
tc awrite.twice "--expect-hex 0=00000000000000ff" "" \
	"noterm $(resp "$O_AWRESP" "$M1") $(resp "$O_AWRESP" $((M1 + 1)))" \
	"$AW value=$W8" "$RX_AWR" "$AW value=0xff" "$RX_AWR"
tc awrite.after_write_flush "$FA --expect-hex 0=0a0b0c0d --expect-hex 64=$W8HEX" "" \
	"noterm $(resp "$O_FRESP" "$M1") $(resp "$O_AWRESP" $((M1 + 1)))" \
	"write $AT data=0a0b0c0d" "$FL size=4 $G" "$AW+64 value=$W8" "$RX_AWR"
tc awrite.no_remote_read_needed "--access lw,rw --expect-hex 0=$W8HEX" "" \
	"noterm $(resp "$O_AWRESP" "$M1")" "$AW value=$W8" "$RX_AWR"

# Atomic Write: refused
AH="hdrs=MDR rx:att_opcode=$O_AWREQ.att_qn=$Q1.att_msn=$M1.att_mo=0"
tc awrite.misaligned "" "" "term=$T_STREAM $AH" "$AW+4 value=$W8"
tc awrite.misaligned_1 "" "" "term=$T_STREAM $AH" "$AW+1 value=$W8"
for n in 0 4 7 9 16; do
	tc "awrite.length_$n" "" "" "term=$T_STREAM $AH" "$AW size=$n value=$W8"
done
tc awrite.no_remote_write "--access lw,rr,ra,fg" "" "term=$T_ACCESS $AH" "$AW value=$W8"
tc awrite.invalid_stag_index "" "" "term=$T_STAG $AH.*att_wstag=" \
	"awrite stag=\${rkey}^0x100 to=\${addr} value=$W8"
tc awrite.invalid_stag_key "" "" "term=$T_STAG $AH" "awrite stag=\${rkey}^0x1 to=\${addr} value=$W8"
tc awrite.other_pd "--pd2" "" "term=$T_PD $AH" "$AW value=$W8"
tc awrite.bounds_end "" "" "term=$T_BOUNDS $AH" "$AW+\${len} value=$W8"
tc awrite.bounds_before "" "" "term=$T_BOUNDS $AH" "$AW-8 value=$W8"
tc awrite.bounds_wrap "" "" "term=$T_BOUNDS $AH" "awrite stag=\${rkey} to=0xfffffffffffffff8 value=$W8"
tc awrite.qn_0 "" "" "term=$T_QN hdrs=MD" "$AW value=$W8 qn=$SIWX_DDP_QN_SEND"
tc awrite.qn_3 "" "" "term=$T_QN hdrs=MD" "$AW value=$W8 qn=$Q3"
tc awrite.wrong_msn "" "" "term=$T_MSN hdrs=MD" "$AW value=$W8 msn=$((M1 + 1))"
tc awrite.mo_nonzero "" "" "term=$T_MO" "$AW value=$W8 mo=8"
tc awrite.not_last "" "" "term=$T_MO" "$AW value=$W8 l=0"
tc awrite.with_payload "" "" "term=$T_LONG" "$AW value=$W8 data=00112233"
# (the word already holds the value: whether the requests within the IRD
# run before the Terminate or not, the memory is the same)
W8LE=0x8877665544332211		# --set-u64 is host order (x86: little-endian)
tc awrite.ird_exceeded "--ird 1 --ord 1 --set-u64 64=$W8LE --expect-hex 64=$W8HEX" \
	"--ird 1 --ord 1 --coalesce" \
	"term=$T_STREAM peer:^reply.*ird=1" "$AW+64 value=$W8 repeat=8"
tc awrite.response_unsolicited "" "" "term=$T_NOBUF hdrs=MD" 'awrite_resp'
# Read, atomic, Flush and Atomic Write Requests share the one IRD
tc ird.shared_read_flush_awrite "$FA --ird 1 --ord 1 --set-u64 64=$W8LE --expect-hex 64=$W8HEX" \
	"--ird 1 --ord 1 --coalesce" "term=$T_STREAM peer:^reply.*ird=1" \
	"read_req sink_stag=1 sink_to=0 size=8 src_stag=\${rkey} src_to=\${addr}" \
	"$FL size=8 $G" "$AW+64 value=$W8" "atomic $AT add=0" "$FL size=8 $G" "$AW+64 value=$W8"

# responses of the wrong kind for the oldest outstanding request (raw_server
# posts a FetchAdd; it cannot post a Flush or an Atomic Write itself)
tc requester.flush_resp_for_atomic "--post-fadd 5" "" \
	"needs=post term=$T_NOBUF !srv:cqe.cq=send.*status=success srv:result.u64=0x5a5a5a5a5a5a5a5a" \
	'rx ms=5000 until=0xa' 'flush_resp'
tc requester.awrite_resp_for_atomic "--post-fadd 5" "" \
	"needs=post term=$T_NOBUF !srv:cqe.cq=send.*status=success srv:result.u64=0x5a5a5a5a5a5a5a5a" \
	'rx ms=5000 until=0xa' 'awrite_resp'

# --- RFC 7306 Immediate Data (QN 0, Send MSN, exactly 8 bytes)
tc imm.valid "" "" \
	"needs=imm noterm srv:cqe.cq=recv.wr_id=100.status=success.*byte_len=0.*with_imm=1.imm=0x55667788 !srv:cqe.cq=recv.wr_id=101.status=success" \
	"imm value=$V0"
tc imm.valid_se "" "" \
	"needs=imm noterm srv:cqe.cq=recv.wr_id=100.status=success.*with_imm=1.imm=0x55667788" \
	"imm se=1 value=$V0"
tc imm.after_write "--expect-hex 0=0102030405060708090a0b0c0d0e0f10" "" \
	"needs=imm noterm srv:cqe.cq=recv.wr_id=100.status=success.*byte_len=16.*with_imm=1.imm=0x00000042" \
	"write $AT data=0102030405060708090a0b0c0d0e0f10" 'imm value=0x42'
tc imm.after_write_then_send "--expect-hex 0=01020304" "" \
	"needs=imm noterm srv:cqe.cq=recv.wr_id=100.status=success.*byte_len=1.*with_imm=0 srv:cqe.cq=recv.wr_id=101.status=success.*byte_len=0.*with_imm=1.imm=0x00000043" \
	"write $AT data=01020304" 'send data=ee' 'imm value=0x43'
# siw reads a whole header before it checks the MPA length: a valid Send
# follows so that the bytes the short FPDU lacks arrive.
tc imm.len_0 "" "--coalesce" "needs=imm term=2/0/0x03" 'imm len=0' 'send data=00'
tc imm.len_4 "" "--coalesce" "needs=imm term=2/0/0x03" 'imm len=4' 'send data=00'
tc imm.len_9 "" "" "needs=imm term=1/2/0x05 hdrs=MD" 'imm len=9'
tc imm.no_receive "--recv 0" "" "needs=imm term=1/2/0x02 hdrs=MD" "imm value=$V0"
tc imm.wrong_qn "" "" "needs=imm term=1/2/0x01 hdrs=MD" "imm qn=1 value=$V0"
tc imm.wrong_msn "" "" "needs=imm term=1/2/0x03 hdrs=MD" "imm msn=3 value=$V0"
tc imm.mo_nonzero "" "" "needs=imm term=1/2/0x04 hdrs=MD" "imm mo=8 value=$V0"
tc imm.not_last "" "" "needs=imm term=1/2/0x04 hdrs=MD" "imm l=0 value=$V0"

# ---------------------------------------------------------------- select
FILTER=
case ${1:-} in
-l) printf '%s\n' "${NAMES[@]}"; exit 0 ;;
-h|--help) sed -n '3,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
?*) FILTER=$1 ;;
esac
SEL=()
for i in "${!NAMES[@]}"; do
	[ -z "$FILTER" ] || [[ ${NAMES[$i]} =~ $FILTER ]] || continue
	SEL+=("$i")
done

echo "TAP version 13"
echo "1..$((${#SEL[@]} + 1))"
for f in "$BIN/raw_server" "$PEER"; do
	[ -x "$f" ] || { echo "Bail out! $f missing (make selftests)"; exit 1; }
done
mkdir -p "$OUT" || { echo "Bail out! cannot create $OUT"; exit 1; }

"$BIN/raw_server" --caps >"$OUT/caps" 2>&1
mapfile -t CAPS <"$OUT/caps"
printf '# %s\n' "${CAPS[@]}"
HAS_IMM=0
[[ ${CAPS[*]} == *imm_data=1* ]] && HAS_IMM=1


# ---------------------------------------------------------------- helpers
# any ARRAY REGEX: some element matches
any() {
	local -n _a=$1
	local _l

	for _l in "${_a[@]}"; do
		[[ $_l =~ $2 ]] && return 0
	done
	return 1
}

# exec_case INDEX PORT: run case INDEX on PORT, raw_server against
# mpa-peer; their output in OUT/NAME.server and OUT/NAME.peer, and in
# OUT/NAME.rc "PEER-EXIT SERVER-EXIT listening|-". Cases run JOBS at a
# time (each its own raw_server, port and ready pipe).
exec_case() {
	local i=$1 port=$2 name=${NAMES[$1]} spid prc src e t=- rxms=800 ready fd
	local -a sargs=() popts=() steps=() exps=()

	read -r -a sargs <<<"${SARGS[$i]}"
	read -r -a popts <<<"${POPTS[$i]}"
	read -r -a exps <<<"${EXPS[$i]}"
	IFS=$'\x1f' read -r -a steps <<<"${STEPS[$i]}"
	for e in "${exps[@]}"; do
		case $e in term=*) rxms=2500 ;; esac
	done
	# dmesg only (KERN_INFO stays off the quiet console): attribution
	echo "<6>rawpeer: case $name port $port" >/dev/kmsg 2>/dev/null
	: >"$OUT/$name.server"
	: >"$OUT/$name.peer"
	# a pipe raw_server reports "listening" on (read without a sleep
	# loop), where pipes can be made (not on the results' 9p share)
	ready=$(mktemp -u "${TMPDIR:-/tmp}/rawpeer-ready.XXXXXX")
	mkfifo -m 600 "$ready" || { echo "1 1 -" >"$OUT/$name.rc"; return; }
	exec {fd}<>"$ready"
	rm -f "$ready"
	# Connect only once rdma_listen() returned: siw never accepts a
	# connection that arrives while it is still setting up the listener.
	"$BIN/raw_server" --port "$port" --linger 400 --ready-fd 3 "${sargs[@]}" \
		>"$OUT/$name.server" 2>&1 3>&"$fd" &
	spid=$!
	read -r -t 30 -u "$fd" t || t=-
	exec {fd}>&-
	# (--delay 0: the first FPDU right behind the MPA Reply; upstream siw's
	# responder would leave it unprocessed, patch 0024)
	"${IN_NS[@]}" "$PEER" --timeout 20000 --delay 0 --rx-ms "$rxms" "${popts[@]}" "$A0" "$port" \
		"${steps[@]}" >"$OUT/$name.peer" 2>&1
	prc=$?
	wait "$spid"	# bounded: every wait of raw_server is
	src=$?
	echo "$prc $src $t" >"$OUT/$name.rc"
}

# run_case INDEX: the verdict on what exec_case left; sets RESULT
# (ok|fail|skip), WHY and DIAG (lines)
run_case() {
	local i=$1 name=${NAMES[$1]} srv peer prc src e t
	local -a exps=() P=() S=() RX=() TERMS=()
	local noconn=0 recv_ok=0 want_term=''

	DIAG=()

	read -r -a exps <<<"${EXPS[$i]}"
	srv=$OUT/$name.server
	peer=$OUT/$name.peer
	RESULT=ok WHY=
	for e in "${exps[@]}"; do
		case $e in
		noconn) noconn=1 ;;
		recv-ok) recv_ok=1 ;;
		term=*) want_term=${e#term=} ;;
		esac
	done

	read -r prc src t <"$OUT/$name.rc"
	[ "$t" != - ] || DIAG+=("raw_server not listening after 30s")
	mapfile -t P <"$peer"
	mapfile -t S <"$srv"
	for t in "${P[@]}"; do
		[[ $t == "rx "* ]] && RX+=("$t")
		[[ $t == "rx opcode=0x7 term"* ]] && TERMS+=("$t")
	done

	bad() { RESULT=fail; DIAG+=("$*"); }

	if any exps '^needs=post$' && any S '^server post .*rc=[-1-9]'; then
		RESULT=skip WHY="raw_server could not post the atomic (libsiw without RFC 7306 atomics)"
		return
	fi
	if [ "$noconn" = 1 ]; then
		! any S '^server connect-request' ||
			bad "the responder accepted a connect request it must refuse"
	else
		[ "$prc" = 0 ] || bad "mpa-peer exit $prc"
		any S '^server end ' || bad "raw_server gave no verdict (exit $src)"
		any S '^server end .*result=mem-ok' || bad "memory not as expected (raw_server exit $src)"
	fi
	for e in "${exps[@]}"; do
		case $e in
		term=any)
			[ ${#TERMS[@]} = 1 ] || bad "expected one Terminate, got ${#TERMS[@]}"
			;;
		term=*)
			local L E C
			IFS=/ read -r L E C <<<"${e#term=}"
			if [ ${#TERMS[@]} != 1 ]; then
				bad "expected one Terminate $L/$E/$C, got ${#TERMS[@]}"
			elif [[ ${TERMS[0]} =~ \ layer=([0-9]+)\ etype=([0-9]+)\ code=(0x[0-9a-f]+)\  ]]; then
				if [ "${BASH_REMATCH[1]}" != "$L" ] ||
				   [ "${BASH_REMATCH[2]}" != "$E" ] ||
				   [ $((BASH_REMATCH[3])) != $((C)) ]; then
					bad "Terminate ${BASH_REMATCH[1]}/${BASH_REMATCH[2]}/${BASH_REMATCH[3]}, expected $L/$E/$C"
				fi
			else
				bad "Terminate not decoded"
			fi
			;;
		noterm)
			[ ${#TERMS[@]} = 0 ] || bad "unexpected Terminate: ${TERMS[0]:0:160}"
			;;
		hdrs=*)
			any TERMS " hdrs=${e#hdrs=} " || bad "Terminate header flags not ${e#hdrs=}"
			;;
		rx:*)
			any RX "${e#rx:}" || bad "no rx line matches '${e#rx:}'"
			;;
		peer:*)
			any P "${e#peer:}" || bad "no mpa-peer line matches '${e#peer:}'"
			;;
		'!peer:'*)
			! any P "${e#!peer:}" || bad "an mpa-peer line matches '${e#!peer:}'"
			;;
		srv:*)
			any S "^server ${e#srv:}" || bad "no server line matches '${e#srv:}'"
			;;
		'srv<:'*)
			local r1=${e#srv<:} r2 l i1=-1 i2=-1 k=0
			r2=${r1#*<} r1=${r1%%<*}
			for l in "${S[@]}"; do
				[ "$i1" -ge 0 ] || [[ ! $l =~ ^server\ $r1 ]] || i1=$k
				[ "$i2" -ge 0 ] || [[ ! $l =~ ^server\ $r2 ]] || i2=$k
				k=$((k + 1))
			done
			[ "$i1" -ge 0 ] && { [ "$i2" -lt 0 ] || [ "$i1" -lt "$i2" ]; } ||
				bad "no server line matches '$r1' before one matches '$r2'"
			;;
		'!srv:'*)
			! any S "^server ${e#!srv:}" || bad "a server line matches '${e#!srv:}'"
			;;
		qp-err)
			any S '^server end .*qp_err=1' || bad "responder QP not in ERR at the end"
			any S "^server $FLUSHED" || bad "the last posted receive never completed (not flushed)"
			;;
		noconn|recv-ok|needs=*) ;;
		*)	# a typo must not make a check silently absent
			bad "unknown expectation '$e' (rawpeer.sh's own error)"
			;;
		esac
	done
	if [ -n "$want_term" ] && [ "$noconn" = 0 ]; then
		any P '^closed' || bad "the connection was not closed after the Terminate"
		[ "$recv_ok" = 1 ] || ! any S '^server cqe cq=recv.*status=success' ||
			bad "a receive completed successfully"
		[ ${#TERMS[@]} = 0 ] || [ "${RX[-1]}" = "${TERMS[-1]}" ] ||
			bad "frames after the Terminate"
	fi
}

# Start the cases JOBS at a time, in the background; report each, in
# order, once it has run.
started=0
running() {	# RUNNING: how many started cases have not ended
	local k
	RUNNING=0
	for ((k = 0; k < started; k++)); do
		! kill -0 "${PIDS[k]}" 2>/dev/null || RUNNING=$((RUNNING + 1))
	done
}
start_more() {	# up to JOBS cases running
	running
	while [ "$started" -lt ${#SEL[@]} ] && [ "$RUNNING" -lt "$JOBS" ]; do
		rm -f "$OUT/${NAMES[${SEL[$started]}]}.rc"
		T0[started]=$SECONDS
		exec_case "${SEL[$started]}" $((PORT + started + 1)) &
		PIDS[started]=$!
		started=$((started + 1))
		RUNNING=$((RUNNING + 1))
	done
}
n=0 fails=0 T0=() PIDS=()
for j in "${!SEL[@]}"; do
	i=${SEL[$j]}
	start_more
	while kill -0 "${PIDS[j]}" 2>/dev/null; do
		wait -n 2>/dev/null
		start_more
	done
	wait "${PIDS[j]}" 2>/dev/null
	n=$((n + 1))
	name=${NAMES[$i]}
	todo=
	if [[ " ${EXPS[$i]} " == *" needs=imm "* ]] && [ "$HAS_IMM" = 0 ]; then
		todo="kernel reports no Immediate Data support (SIW_CAP_IMM_DATA)"
	fi
	t0=${T0[j]}
	[ -s "$OUT/$name.rc" ] || echo "1 1 -" >"$OUT/$name.rc"
	run_case "$i"
	mapfile -t P <"$OUT/$name.peer"
	mapfile -t S <"$OUT/$name.server"
	got="no Terminate"
	for l in "${P[@]}"; do
		[[ $l =~ ^rx\ opcode=0x7.*\ (layer=[0-9]+\ etype=[0-9]+\ code=0x[0-9a-f]+\ hdrs=[A-Z-]+) ]] &&
			{ got=${BASH_REMATCH[1]}; break; }
	done
	end=
	for l in "${S[@]}"; do [[ $l == "server end "* ]] && end=${l#server end }; done
	echo "# $name: $got; ${end:-no server verdict}; $((SECONDS - t0))s"
	if [ "$RESULT" = skip ]; then
		echo "ok $n rawpeer.$name # SKIP $WHY"
		continue
	fi
	if [ "$RESULT" = ok ] && [ -z "$todo" ]; then
		echo "ok $n rawpeer.$name"
		continue
	fi
	printf '# %s\n' "${DIAG[@]}"
	echo "# --- mpa-peer ($OUT/$name.peer):"
	k=$((${#P[@]} > 12 ? ${#P[@]} - 12 : 0))
	for l in "${P[@]:$k}"; do echo "#   ${l:0:300}"; done
	echo "# --- raw_server ($OUT/$name.server):"
	for l in "${S[@]}"; do
		[[ $l == *"cqe cq=recv"*Flushed* ]] || echo "#   ${l:0:300}"
	done
	if [ -n "$todo" ]; then
		echo "not ok $n rawpeer.$name # TODO $todo"
	else
		echo "not ok $n rawpeer.$name"
		fails=$((fails + 1))
	fi
done

# ---------------------------------------------------------------- kernel
n=$((n + 1))
dmesg >"$OUT/dmesg" 2>&1
"$BIN/raw_server" --caps >"$OUT/caps.end" 2>&1
crc=$?
mapfile -t K <"$OUT/dmesg"
case_name='' bad_cases=() bad_lines=()
for l in "${K[@]}"; do
	[[ $l =~ rawpeer:\ case\ ([^ ]+) ]] && { case_name=${BASH_REMATCH[1]}; continue; }
	[[ $l =~ $KERNEL_PROBLEMS ]] || continue
	[ -n "$case_name" ] || continue	# before this suite
	bad_lines+=("[$case_name] $l")
	[[ " ${bad_cases[*]} " == *" $case_name "* ]] || bad_cases+=("$case_name")
done
if [ ${#bad_lines[@]} = 0 ] && [ "$crc" = 0 ]; then
	echo "ok $n rawpeer.kernel_clean"
else
	[ "$crc" = 0 ] || echo "# the device no longer answers: raw_server --caps exit $crc"
	[ ${#bad_cases[@]} = 0 ] || echo "# kernel problems during: ${bad_cases[*]}"
	for l in "${bad_lines[@]:0:12}"; do echo "#   ${l:0:300}"; done
	echo "not ok $n rawpeer.kernel_clean"
	fails=$((fails + 1))
fi
[ "$fails" = 0 ]
