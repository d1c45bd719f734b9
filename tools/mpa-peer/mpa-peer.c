// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mpa-peer - a raw iWARP peer in user space, for tests.
 *
 * Connects over plain TCP to an rdma_cm listener on an iWARP device (iWARP
 * rdma_cm adds no header of its own: the MPA private data is the ULP's),
 * sends an MPA Request exactly as told (RFC 5044, RFC 6581), prints the MPA
 * Reply, sends the RTR the reply asks for, then sends the FPDUs described
 * by the steps on the command line or in a script, with MPA padding and
 * CRC32c (software) as negotiated -- including frames no real peer sends.
 * Everything received afterwards is parsed and printed as one line per
 * FPDU. With --listen it is the responder instead: it accepts connections
 * (from an MPA initiator under test), prints each MPA Request, answers it
 * (by default as RFC 5044/6581 allow, or as told), and goes on the same way.
 * See usage() and tools/mpa-peer/README.
 *
 * No dependencies beyond libc.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <siwx/wire.h>

#define MAX_VARS	64
#define MAX_TOK		64
#define MAX_FRAME	(70 * 1024)
#define RXBUF		(256 * 1024)

/* ---------------------------------------------------------------- output */

static void __attribute__((noreturn, format(printf, 2, 3)))
die(int rc, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "mpa-peer: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(rc);
}

static void __attribute__((format(printf, 1, 2)))
out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static void hexstr(char *dst, size_t dstlen, const uint8_t *p, size_t n)
{
	size_t i;

	if (!n) {
		snprintf(dst, dstlen, "-");
		return;
	}
	for (i = 0; i < n && 2 * i + 3 <= dstlen; i++)
		sprintf(dst + 2 * i, "%02x", p[i]);
	dst[2 * i] = 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------- crc32c */

static uint32_t crc_table[256];

static void crc32c_init(void)
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

/* CRC32c (Castagnoli) as MPA uses it: init ~0, reflected, final ~ */
static uint32_t crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = SIWX_MPA_CRC32C_INIT;

	while (n--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

/*
 * The CRC field carries the CRC32c in the byte order of RFC 3385/iSCSI:
 * least significant byte first (what the kernel's crc32c shash emits).
 */
static void put_crc(uint8_t *p, uint32_t c)
{
	p[0] = c;
	p[1] = c >> 8;
	p[2] = c >> 16;
	p[3] = c >> 24;
}

static uint32_t get_crc(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---------------------------------------------------------------- bytes */

static void be16(uint8_t *p, uint32_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static void be64(uint8_t *p, uint64_t v)
{
	be32(p, v >> 32);
	be32(p + 4, v);
}

static uint32_t rd16(const uint8_t *p)
{
	return p[0] << 8 | p[1];
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) << 32 | rd32(p + 4);
}

/* v placed in the bits of mask (the kernel's FIELD_PREP) */
static uint32_t field_prep(uint32_t mask, uint64_t v)
{
	return (uint32_t)(v << __builtin_ctz(mask)) & mask;
}

/* MPA pad bytes after n bytes of length field and ULPDU */
static size_t mpa_pad(size_t n)
{
	return (SIWX_MPA_PAD_ALIGN - n % SIWX_MPA_PAD_ALIGN) % SIWX_MPA_PAD_ALIGN;
}

/* ---------------------------------------------------------------- vars */

static struct {
	char name[32];
	uint64_t val;
} vars[MAX_VARS];
static int nvars;

static void set_var(const char *name, size_t nlen, uint64_t val)
{
	int i;

	if (nlen >= sizeof(vars[0].name))
		nlen = sizeof(vars[0].name) - 1;
	for (i = 0; i < nvars; i++)
		if (strlen(vars[i].name) == nlen &&
		    !strncmp(vars[i].name, name, nlen))
			break;
	if (i == nvars) {
		if (nvars == MAX_VARS)
			return;
		nvars++;
	}
	memcpy(vars[i].name, name, nlen);
	vars[i].name[nlen] = 0;
	vars[i].val = val;
}

static int get_var(const char *name, size_t nlen, uint64_t *val)
{
	int i;

	for (i = 0; i < nvars; i++)
		if (strlen(vars[i].name) == nlen &&
		    !strncmp(vars[i].name, name, nlen)) {
			*val = vars[i].val;
			return 0;
		}
	return -1;
}

static void unset_var(const char *name)
{
	int i;

	for (i = 0; i < nvars; i++)
		if (!strcmp(vars[i].name, name)) {
			vars[i] = vars[--nvars];
			return;
		}
}

/*
 * A number: operands joined by + - * ^ | & (evaluated left to right, no
 * precedence). Operand: ${name} or $name (a variable), or an integer in C
 * notation (0x.., 0.., decimal), optionally preceded by ~.
 */
static int eval(const char *s, uint64_t *out)
{
	uint64_t acc = 0, v;
	char op = '+';
	int inv;

	if (!*s)
		return -1;
	for (;;) {
		inv = 0;
		while (*s == '~') {
			inv ^= 1;
			s++;
		}
		if (*s == '$') {
			const char *n = s + 1, *e;

			if (*n == '{') {
				n++;
				e = strchr(n, '}');
				if (!e)
					return -1;
				s = e + 1;
			} else {
				for (e = n; isalnum((unsigned char)*e) || *e == '_'; e++)
					;
				s = e;
			}
			if (get_var(n, e - n, &v)) {
				fprintf(stderr, "mpa-peer: undefined variable %.*s\n",
					(int)(e - n), n);
				return -1;
			}
		} else {
			char *end;

			if (!isdigit((unsigned char)*s))
				return -1;
			errno = 0;
			v = strtoull(s, &end, 0);
			if (errno || end == s)
				return -1;
			s = end;
		}
		if (inv)
			v = ~v;
		switch (op) {
		case '+': acc += v; break;
		case '-': acc -= v; break;
		case '*': acc *= v; break;
		case '^': acc ^= v; break;
		case '|': acc |= v; break;
		case '&': acc &= v; break;
		}
		if (!*s)
			break;
		if (!strchr("+-*^|&", *s))
			return -1;
		op = *s++;
	}
	*out = acc;
	return 0;
}

/* Hex bytes: optional 0x, separators ':', '_', '.', '-' ignored. */
static int parse_hex(const char *s, uint8_t *buf, size_t max, size_t *n)
{
	size_t k = 0;
	int hi = -1, d;

	if (!strcmp(s, "-")) {
		*n = 0;
		return 0;
	}
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; *s; s++) {
		if (strchr(":_.-", *s))
			continue;
		if (!isxdigit((unsigned char)*s))
			return -1;
		d = isdigit((unsigned char)*s) ? *s - '0' :
			(tolower((unsigned char)*s) - 'a' + 10);
		if (hi < 0) {
			hi = d;
		} else {
			if (k == max)
				return -1;
			buf[k++] = hi << 4 | d;
			hi = -1;
		}
	}
	if (hi >= 0)
		return -1;
	*n = k;
	return 0;
}

/* ---------------------------------------------------------------- steps */

struct step {
	char *cmd;
	int ntok;
	char *key[MAX_TOK];
	char *val[MAX_TOK];
	int used[MAX_TOK];
	const char *text;	/* for messages */
	int lineno;
};

static void step_parse(struct step *st, char *line, const char *text,
		       int lineno)
{
	char *save = NULL, *t;

	memset(st, 0, sizeof(*st));
	st->text = text;
	st->lineno = lineno;
	st->cmd = strtok_r(line, " \t\r\n", &save);
	while ((t = strtok_r(NULL, " \t\r\n", &save))) {
		char *eq = strchr(t, '=');

		if (st->ntok == MAX_TOK)
			die(2, "step '%s': too many arguments", text);
		if (!eq)
			die(2, "step '%s': '%s' is not key=value", text, t);
		*eq = 0;
		st->key[st->ntok] = t;
		st->val[st->ntok] = eq + 1;
		st->ntok++;
	}
}

static const char *sget(struct step *st, const char *key)
{
	int i;

	for (i = st->ntok - 1; i >= 0; i--)
		if (!strcmp(st->key[i], key)) {
			st->used[i] = 1;
			return st->val[i];
		}
	return NULL;
}

/* 1: key present (value in *v), 0: absent (*v = dflt) */
static int nget(struct step *st, const char *key, uint64_t dflt, uint64_t *v)
{
	const char *s = sget(st, key);

	*v = dflt;
	if (!s)
		return 0;
	if (eval(s, v))
		die(2, "step '%s': bad number %s=%s", st->text, key, s);
	return 1;
}

static void step_done(struct step *st)
{
	int i;

	for (i = 0; i < st->ntok; i++)
		if (!st->used[i])
			die(2, "step '%s': unknown argument '%s' for '%s'",
			    st->text, st->key[i], st->cmd);
}

/* ---------------------------------------------------------------- state */

static struct {
	int fd;
	int crc;		/* CRC negotiated (reply's C flag) */
	int crc_req;		/* CRC requested */
	uint32_t msn[SIWX_DDP_QN_COUNT];	/* next MSN per untagged queue we send on */
	uint32_t reqid;		/* next atomic request id */
	uint8_t rx[RXBUF];
	size_t rxlen;
	int closed;
	uint8_t tx[MAX_FRAME * 4];
	size_t txlen;
	int coalesce;
	int rx_fpdus;
	int terms;
} S;	/* zeroed (.bss); main() sets the non-zero start values */

/* what rx_for() waits for (print_fpdu() sets got_want) */
static int want_op = -1, got_want;

static void tx_flush(void)
{
	size_t off = 0;
	ssize_t n;

	while (off < S.txlen) {
		n = send(S.fd, S.tx + off, S.txlen - off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			out("tx-error errno=%d (%s) unsent=%zu\n", errno,
			    strerror(errno), S.txlen - off);
			break;
		}
		off += n;
	}
	S.txlen = 0;
}

static void tx_queue(const uint8_t *p, size_t n)
{
	if (S.txlen + n > sizeof(S.tx))
		tx_flush();
	if (n > sizeof(S.tx)) {
		S.txlen = 0;
		memcpy(S.tx, p, sizeof(S.tx));
		die(2, "frame too large");
	}
	memcpy(S.tx + S.txlen, p, n);
	S.txlen += n;
	if (!S.coalesce)
		tx_flush();
}

/* ---------------------------------------------------------------- receive */

static const char *opname(unsigned int op)
{
	static const char *const n[SIWX_RDMAP_MASK_OPCODE + 1] = {
		"write", "read_req", "read_resp", "send", "send_inv",
		"send_se", "send_se_inv", "term", "imm", "imm_se",
		"atomic_req", "atomic_resp", "op_c", "op_d", "op_e", "op_f"
	};
	return n[op & SIWX_RDMAP_MASK_OPCODE];
}

static size_t att_rdmap_len(unsigned int op)
{
	switch (op) {
	case SIWX_RDMAP_OP_READ_REQ: return SIWX_RDMAP_READ_REQ_SIZE;
	case SIWX_RDMAP_OP_ATOMIC_REQ: return SIWX_RDMAP_ATOMIC_REQ_SIZE;
	case SIWX_RDMAP_OP_ATOMIC_RESP: return SIWX_RDMAP_ATOMIC_RESP_SIZE;
	case SIWX_RDMAP_OP_TERMINATE: return SIWX_RDMAP_TERM_CTRL_SIZE;
	case SIWX_RDMAP_OP_IMM: case SIWX_RDMAP_OP_IMM_SE: return SIWX_RDMAP_IMM_SIZE;
	default: return 0;
	}
}

/* One received FPDU (len = ULPDU length, p -> after the length field). */
static void print_fpdu(const uint8_t *p, size_t len, const char *crcs)
{
	char line[2048], hex[200];
	size_t o = 0, hl;
	unsigned int c0, c1, op;

#define ADD(...) do {							\
		o += snprintf(line + o, sizeof(line) - o, __VA_ARGS__);	\
		if (o >= sizeof(line))					\
			o = sizeof(line) - 1;				\
	} while (0)
	S.rx_fpdus++;
	if (len < SIWX_DDP_CTRL_SIZE) {
		hexstr(hex, sizeof(hex), p, len);
		out("rx short len=%zu bytes=%s crc=%s\n", len, hex, crcs);
		return;
	}
	c0 = p[0];
	c1 = p[1];
	op = c1 & SIWX_RDMAP_MASK_OPCODE;
	if (want_op == 0x100 || (int)op == want_op)
		got_want = 1;
	set_var("rx_opcode", 9, op);
	ADD("rx opcode=0x%x %s len=%zu t=%d l=%d dv=%u rv=%u", op, opname(op),
	    len, !!(c0 & SIWX_DDP_FLAG_T), !!(c0 & SIWX_DDP_FLAG_L),
	    c0 & SIWX_DDP_MASK_DV, c1 >> SIWX_RDMAP_RV_SHIFT);
	if (c0 & SIWX_DDP_FLAG_T) {
		if (len < SIWX_DDP_TAGGED_HDR_SIZE) {
			ADD(" truncated=1");
			goto done;
		}
		ADD(" stag=0x%08x to=0x%" PRIx64, rd32(p + SIWX_DDP_OFF_STAG),
		    rd64(p + SIWX_DDP_OFF_TO));
		set_var("rx_stag", 7, rd32(p + SIWX_DDP_OFF_STAG));
		set_var("rx_to", 5, rd64(p + SIWX_DDP_OFF_TO));
		hl = SIWX_DDP_TAGGED_HDR_SIZE;
	} else {
		if (len < SIWX_DDP_UNTAGGED_HDR_SIZE) {
			ADD(" truncated=1");
			goto done;
		}
		ADD(" qn=%u msn=%u mo=%u inval=0x%08x", rd32(p + SIWX_DDP_OFF_QN),
		    rd32(p + SIWX_DDP_OFF_MSN), rd32(p + SIWX_DDP_OFF_MO),
		    rd32(p + SIWX_DDP_OFF_INVAL_STAG));
		set_var("rx_qn", 5, rd32(p + SIWX_DDP_OFF_QN));
		set_var("rx_msn", 6, rd32(p + SIWX_DDP_OFF_MSN));
		hl = SIWX_DDP_UNTAGGED_HDR_SIZE;
	}
	p += hl;
	len -= hl;
	if (op == SIWX_RDMAP_OP_TERMINATE && !(c0 & SIWX_DDP_FLAG_T) &&
	    len >= SIWX_RDMAP_TERM_CTRL_SIZE) {
		unsigned int l = p[SIWX_TERM_OFF_LAYER_ETYPE] >> SIWX_TERM_LAYER_SHIFT;
		unsigned int e = p[SIWX_TERM_OFF_LAYER_ETYPE] & SIWX_TERM_ETYPE_MASK;
		unsigned int code = p[SIWX_TERM_OFF_ECODE];
		unsigned int f = p[SIWX_TERM_OFF_FLAGS];
		char hd[4] = "", *h = hd;

		S.terms++;
		if (f & SIWX_TERM_FLAG_M)
			*h++ = 'M';
		if (f & SIWX_TERM_FLAG_D)
			*h++ = 'D';
		if (f & SIWX_TERM_FLAG_R)
			*h++ = 'R';
		*h = 0;
		ADD(" layer=%u etype=%u code=0x%02x hdrs=%s ctrl=%02x%02x%02x%02x",
		    l, e, code, hd[0] ? hd : "-", p[0], p[1], p[2], p[3]);
		p += SIWX_RDMAP_TERM_CTRL_SIZE;
		len -= SIWX_RDMAP_TERM_CTRL_SIZE;
		if ((f & SIWX_TERM_FLAG_M) && len >= SIWX_TERM_SEGLEN_SIZE) {
			ADD(" att_seglen=%u", rd16(p));
			p += SIWX_TERM_SEGLEN_SIZE;
			len -= SIWX_TERM_SEGLEN_SIZE;
		}
		if ((f & SIWX_TERM_FLAG_D) && len >= SIWX_DDP_CTRL_SIZE) {
			unsigned int a0 = p[0], a1 = p[1];
			unsigned int aop = a1 & SIWX_RDMAP_MASK_OPCODE;

			ADD(" att_t=%d att_l=%d att_opcode=0x%x", !!(a0 & SIWX_DDP_FLAG_T),
			    !!(a0 & SIWX_DDP_FLAG_L), aop);
			if ((a0 & SIWX_DDP_FLAG_T) &&
			    len >= SIWX_DDP_TAGGED_HDR_SIZE) {
				ADD(" att_stag=0x%08x att_to=0x%" PRIx64,
				    rd32(p + SIWX_DDP_OFF_STAG),
				    rd64(p + SIWX_DDP_OFF_TO));
				p += SIWX_DDP_TAGGED_HDR_SIZE;
				len -= SIWX_DDP_TAGGED_HDR_SIZE;
			} else if (!(a0 & SIWX_DDP_FLAG_T) &&
				   len >= SIWX_DDP_UNTAGGED_HDR_SIZE) {
				ADD(" att_qn=%u att_msn=%u att_mo=%u",
				    rd32(p + SIWX_DDP_OFF_QN),
				    rd32(p + SIWX_DDP_OFF_MSN),
				    rd32(p + SIWX_DDP_OFF_MO));
				p += SIWX_DDP_UNTAGGED_HDR_SIZE;
				len -= SIWX_DDP_UNTAGGED_HDR_SIZE;
			} else {
				ADD(" att_truncated=1");
			}
			if ((f & SIWX_TERM_FLAG_R) && len) {
				hl = att_rdmap_len(aop);
				if (hl && hl <= len && aop == SIWX_RDMAP_OP_ATOMIC_REQ)
					ADD(" att_aop=%u att_reqid=0x%x",
					    rd32(p + SIWX_AREQ_OFF_AOPCODE) &
					    SIWX_AREQ_AOPCODE_MASK,
					    rd32(p + SIWX_AREQ_OFF_REQ_ID));
			}
		}
		hexstr(hex, sizeof(hex), p, len);
		ADD(" rest=%s", hex);
		goto done;
	}
	switch (op) {
	case SIWX_RDMAP_OP_ATOMIC_RESP:
		if (len >= SIWX_RDMAP_ATOMIC_RESP_SIZE) {
			ADD(" reqid=0x%x value=0x%016" PRIx64,
			    rd32(p + SIWX_ARESP_OFF_REQ_ID),
			    rd64(p + SIWX_ARESP_OFF_VALUE));
			set_var("rx_reqid", 8, rd32(p + SIWX_ARESP_OFF_REQ_ID));
			set_var("rx_value", 8, rd64(p + SIWX_ARESP_OFF_VALUE));
			p += SIWX_RDMAP_ATOMIC_RESP_SIZE;
			len -= SIWX_RDMAP_ATOMIC_RESP_SIZE;
		}
		break;
	case SIWX_RDMAP_OP_READ_REQ:
		if (len >= SIWX_RDMAP_READ_REQ_SIZE) {
			ADD(" sink_stag=0x%08x sink_to=0x%" PRIx64
			    " size=%u src_stag=0x%08x src_to=0x%" PRIx64,
			    rd32(p + SIWX_RREQ_OFF_SINK_STAG),
			    rd64(p + SIWX_RREQ_OFF_SINK_TO),
			    rd32(p + SIWX_RREQ_OFF_SIZE),
			    rd32(p + SIWX_RREQ_OFF_SRC_STAG),
			    rd64(p + SIWX_RREQ_OFF_SRC_TO));
			set_var("rx_sink_stag", 12,
				rd32(p + SIWX_RREQ_OFF_SINK_STAG));
			set_var("rx_sink_to", 10, rd64(p + SIWX_RREQ_OFF_SINK_TO));
			set_var("rx_size", 7, rd32(p + SIWX_RREQ_OFF_SIZE));
			p += SIWX_RDMAP_READ_REQ_SIZE;
			len -= SIWX_RDMAP_READ_REQ_SIZE;
		}
		break;
	case SIWX_RDMAP_OP_ATOMIC_REQ:
		if (len >= SIWX_RDMAP_ATOMIC_REQ_SIZE) {
			unsigned int aop = rd32(p + SIWX_AREQ_OFF_AOPCODE) &
					   SIWX_AREQ_AOPCODE_MASK;

			ADD(" aop=%u reqid=0x%x astag=0x%08x ato=0x%" PRIx64
			    " add=0x%" PRIx64 " addmask=0x%" PRIx64
			    " cmp=0x%" PRIx64 " cmpmask=0x%" PRIx64,
			    aop, rd32(p + SIWX_AREQ_OFF_REQ_ID),
			    rd32(p + SIWX_AREQ_OFF_STAG),
			    rd64(p + SIWX_AREQ_OFF_TO),
			    rd64(p + SIWX_AREQ_OFF_ADD_SWAP),
			    rd64(p + SIWX_AREQ_OFF_ADD_SWAP_MASK),
			    rd64(p + SIWX_AREQ_OFF_COMPARE),
			    rd64(p + SIWX_AREQ_OFF_COMPARE_MASK));
			set_var("rx_reqid", 8, rd32(p + SIWX_AREQ_OFF_REQ_ID));
			set_var("rx_aop", 6, aop);
			set_var("rx_astag", 8, rd32(p + SIWX_AREQ_OFF_STAG));
			set_var("rx_ato", 6, rd64(p + SIWX_AREQ_OFF_TO));
			set_var("rx_add", 6, rd64(p + SIWX_AREQ_OFF_ADD_SWAP));
			set_var("rx_cmp", 6, rd64(p + SIWX_AREQ_OFF_COMPARE));
			p += SIWX_RDMAP_ATOMIC_REQ_SIZE;
			len -= SIWX_RDMAP_ATOMIC_REQ_SIZE;
		}
		break;
	case SIWX_RDMAP_OP_IMM: case SIWX_RDMAP_OP_IMM_SE:
		if (len == SIWX_RDMAP_IMM_SIZE)
			ADD(" imm=0x%016" PRIx64, rd64(p));
		break;
	}
	ADD(" payload=%zu", len);
	hexstr(hex, sizeof(hex), p, len > 64 ? 64 : len);
	ADD(" data=%s", hex);
done:
	ADD(" crc=%s", crcs);
	out("%s\n", line);
#undef ADD
}

/* Parse complete FPDUs out of the receive buffer. */
static void rx_parse(void)
{
	size_t off = 0, ulen, pad, flen;
	const char *crcs;

	for (;;) {
		if (S.rxlen - off < SIWX_MPA_HDR_SIZE)
			break;
		ulen = rd16(S.rx + off);
		pad = mpa_pad(SIWX_MPA_HDR_SIZE + ulen);
		flen = SIWX_MPA_HDR_SIZE + ulen + pad + SIWX_MPA_CRC_SIZE;
		if (S.rxlen - off < flen)
			break;
		if (S.crc) {
			uint32_t want = crc32c(S.rx + off,
					       SIWX_MPA_HDR_SIZE + ulen + pad);

			crcs = get_crc(S.rx + off + SIWX_MPA_HDR_SIZE + ulen +
				       pad) == want ? "ok" : "bad";
		} else {
			crcs = get_crc(S.rx + off + SIWX_MPA_HDR_SIZE + ulen +
				       pad) ? "nonzero" : "none";
		}
		print_fpdu(S.rx + off + SIWX_MPA_HDR_SIZE, ulen, crcs);
		off += flen;
	}
	memmove(S.rx, S.rx + off, S.rxlen - off);
	S.rxlen -= off;
}

/*
 * Read for up to ms milliseconds, stopping early on close, or (until >= 0)
 * once an FPDU with RDMAP opcode 'until' (0x100: any FPDU) has arrived.
 */

static void rx_for(uint64_t ms, int until)
{
	uint64_t end = now_ms() + ms;
	struct pollfd pfd = { .fd = S.fd, .events = POLLIN };
	int n;

	tx_flush();
	want_op = until;
	got_want = 0;
	rx_parse();
	while (!S.closed && !got_want) {
		uint64_t t = now_ms();
		ssize_t r;

		if (t >= end)
			break;
		n = poll(&pfd, 1, (int)(end - t));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (S.rxlen == sizeof(S.rx))
			die(1, "receive buffer full (bogus length?)");
		r = recv(S.fd, S.rx + S.rxlen, sizeof(S.rx) - S.rxlen, 0);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			out("reset errno=%d (%s)\n", errno, strerror(errno));
			S.closed = 1;
			break;
		}
		if (r == 0) {
			S.closed = 1;
			break;
		}
		S.rxlen += r;
		rx_parse();
	}
	want_op = -1;
}

/* Read exactly n bytes of handshake within ms (0 ok, -1 eof/timeout). */
static int rx_exact(size_t n, uint64_t ms)
{
	uint64_t end = now_ms() + ms;
	struct pollfd pfd = { .fd = S.fd, .events = POLLIN };
	ssize_t r;

	while (S.rxlen < n) {
		uint64_t t = now_ms();
		int k;

		if (t >= end)
			return -1;
		k = poll(&pfd, 1, (int)(end - t));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		r = recv(S.fd, S.rx + S.rxlen, sizeof(S.rx) - S.rxlen, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r < 0)
				out("reset errno=%d (%s)\n", errno, strerror(errno));
			S.closed = 1;
			return -1;
		}
		S.rxlen += r;
	}
	return 0;
}

/* ---------------------------------------------------------------- frames */

struct frame {
	uint8_t ctrl0, ctrl1;
	int tagged;
	uint32_t stag;		/* tagged */
	uint64_t to;
	uint32_t inval, qn, msn, mo;	/* untagged */
	uint8_t hdr[128];	/* RDMAP header after the DDP header */
	size_t hdrlen;
	uint8_t data[65536];
	size_t datalen;
};

static struct frame F;

/*
 * Options every FPDU step takes: l= (last flag, default 1), dv= rv=
 * (versions, default 1), t= (tagged flag override), ctrl= (both control
 * bytes, raw), mpalen= (length field override), crc= (CRC field: a value
 * or "bad"), pad= (number of pad bytes override), trunc= (send only the
 * first N bytes of the frame).
 */
static void emit(struct step *st, int opcode)
{
	static uint8_t buf[MAX_FRAME];
	uint64_t l, dv, rv, t, ctrl, v;
	uint8_t *d;
	size_t n, ulen, pad, i;
	const char *crcs;

	nget(st, "l", 1, &l);
	nget(st, "dv", SIWX_DDP_VERSION, &dv);
	nget(st, "rv", SIWX_RDMAP_VERSION, &rv);
	nget(st, "t", F.tagged, &t);
	F.ctrl0 = (t ? SIWX_DDP_FLAG_T : 0) | (l ? SIWX_DDP_FLAG_L : 0) |
		  (dv & SIWX_DDP_MASK_DV);
	F.ctrl1 = ((rv << SIWX_RDMAP_RV_SHIFT) & SIWX_RDMAP_MASK_RV) |
		  (opcode & SIWX_RDMAP_MASK_OPCODE);
	if (nget(st, "ctrl", 0, &ctrl)) {
		F.ctrl0 = ctrl >> 8;
		F.ctrl1 = ctrl;
	}
	d = buf + SIWX_MPA_HDR_SIZE;
	d[0] = F.ctrl0;
	d[1] = F.ctrl1;
	if (F.tagged) {
		be32(d + SIWX_DDP_OFF_STAG, F.stag);
		be64(d + SIWX_DDP_OFF_TO, F.to);
		n = SIWX_FPDU_TAGGED_HDR_SIZE;
	} else {
		be32(d + SIWX_DDP_OFF_INVAL_STAG, F.inval);
		be32(d + SIWX_DDP_OFF_QN, F.qn);
		be32(d + SIWX_DDP_OFF_MSN, F.msn);
		be32(d + SIWX_DDP_OFF_MO, F.mo);
		n = SIWX_FPDU_UNTAGGED_HDR_SIZE;
	}
	/* (room for the largest pad= and the CRC) */
	if (n + F.hdrlen + F.datalen + 7 + SIWX_MPA_CRC_SIZE > sizeof(buf))
		die(2, "step '%s': frame too large", st->text);
	memcpy(buf + n, F.hdr, F.hdrlen);
	n += F.hdrlen;
	memcpy(buf + n, F.data, F.datalen);
	n += F.datalen;
	ulen = n - SIWX_MPA_HDR_SIZE;
	nget(st, "mpalen", ulen, &v);
	be16(buf, v);
	pad = mpa_pad(n);
	if (nget(st, "pad", pad, &v))
		pad = v & 7;
	for (i = 0; i < pad; i++)
		buf[n++] = 0;
	if (S.crc)
		v = crc32c(buf, n);
	else
		v = 0;
	crcs = sget(st, "crc");
	if (crcs) {
		if (!strcmp(crcs, "bad"))
			v ^= 0x1;
		else if (eval(crcs, &v))
			die(2, "step '%s': bad crc=%s", st->text, crcs);
	}
	put_crc(buf + n, v);
	n += SIWX_MPA_CRC_SIZE;
	if (nget(st, "trunc", n, &v) && v < n)
		n = v;
	step_done(st);
	tx_queue(buf, n);
}

static void get_data(struct step *st)
{
	const char *d = sget(st, "data");
	uint64_t len, fill;

	F.datalen = 0;
	if (d) {
		if (parse_hex(d, F.data, sizeof(F.data), &F.datalen))
			die(2, "step '%s': bad hex data=%s", st->text, d);
	} else if (nget(st, "len", 0, &len)) {
		size_t i;
		int hf = nget(st, "fill", 0, &fill);

		if (len > sizeof(F.data))
			die(2, "step '%s': len too large", st->text);
		for (i = 0; i < len; i++)
			F.data[i] = hf ? (uint8_t)fill : (uint8_t)(i + 1);
		F.datalen = len;
	}
}

static void untagged(struct step *st, uint32_t dqn)
{
	uint64_t v;
	unsigned int q;

	F.tagged = 0;
	nget(st, "qn", dqn, &v);
	F.qn = v;
	q = F.qn < SIWX_DDP_QN_COUNT ? F.qn : SIWX_DDP_QN_SEND;
	if (!nget(st, "msn", S.msn[q], &v) && F.qn >= SIWX_DDP_QN_COUNT)
		v = SIWX_DDP_MSN_FIRST;
	F.msn = v;
	nget(st, "mo", 0, &v);
	F.mo = v;
	nget(st, "inval", 0, &v);
	F.inval = v;
}

/* advance the MSN counter of the queue an untagged last segment went to */
static void untagged_sent(uint64_t last)
{
	if (!F.tagged && last && F.qn < SIWX_DDP_QN_COUNT)
		S.msn[F.qn]++;
}

static void tagged(struct step *st, uint64_t dstag, uint64_t dto)
{
	uint64_t v;

	F.tagged = 1;
	nget(st, "stag", dstag, &v);
	F.stag = v;
	nget(st, "to", dto, &v);
	F.to = v;
}

static int run_fpdu_step(struct step *st)
{
	const char *c = st->cmd;
	uint64_t v, op = 0, last, se, rep, r;
	int has_op;

	nget(st, "repeat", 1, &rep);
	for (r = 0; r < rep; r++) {
		memset(st->used, 0, sizeof(st->used));
		(void)nget(st, "repeat", 1, &v);
		memset(&F, 0, sizeof(F));
		nget(st, "l", 1, &last);
		has_op = nget(st, "opcode", 0, &op);
		if (!strcmp(c, "send")) {
			nget(st, "se", 0, &se);
			untagged(st, SIWX_DDP_QN_SEND);
			if (!has_op && F.inval)
				op = se ? SIWX_RDMAP_OP_SEND_SE_INV :
					  SIWX_RDMAP_OP_SEND_INV;
			else if (!has_op)
				op = se ? SIWX_RDMAP_OP_SEND_SE : SIWX_RDMAP_OP_SEND;
			get_data(st);
		} else if (!strcmp(c, "write")) {
			tagged(st, 0, 0);
			if (!has_op)
				op = SIWX_RDMAP_OP_WRITE;
			get_data(st);
		} else if (!strcmp(c, "read_resp")) {
			tagged(st, 0, 0);
			if (!has_op)
				op = SIWX_RDMAP_OP_READ_RESP;
			get_data(st);
		} else if (!strcmp(c, "read_req")) {
			untagged(st, SIWX_DDP_QN_READ_REQ);
			if (!has_op)
				op = SIWX_RDMAP_OP_READ_REQ;
			nget(st, "sink_stag", 0, &v);
			be32(F.hdr + SIWX_RREQ_OFF_SINK_STAG, v);
			nget(st, "sink_to", 0, &v);
			be64(F.hdr + SIWX_RREQ_OFF_SINK_TO, v);
			nget(st, "size", 0, &v);
			be32(F.hdr + SIWX_RREQ_OFF_SIZE, v);
			nget(st, "src_stag", 0, &v);
			be32(F.hdr + SIWX_RREQ_OFF_SRC_STAG, v);
			nget(st, "src_to", 0, &v);
			be64(F.hdr + SIWX_RREQ_OFF_SRC_TO, v);
			F.hdrlen = SIWX_RDMAP_READ_REQ_SIZE;
			get_data(st);
		} else if (!strcmp(c, "atomic")) {
			uint64_t aop, rsvd;

			untagged(st, SIWX_DDP_QN_READ_REQ);
			if (!has_op)
				op = SIWX_RDMAP_OP_ATOMIC_REQ;
			nget(st, "aop", 0, &aop);
			nget(st, "rsvd", 0, &rsvd);
			/* the reserved bits are the ones above the AOpCode */
			be32(F.hdr + SIWX_AREQ_OFF_AOPCODE,
			     field_prep((uint32_t)~SIWX_AREQ_AOPCODE_MASK, rsvd) |
			     field_prep(SIWX_AREQ_AOPCODE_MASK, aop));
			if (!nget(st, "reqid", S.reqid, &v))
				S.reqid++;
			be32(F.hdr + SIWX_AREQ_OFF_REQ_ID, v);
			nget(st, "stag", 0, &v);
			be32(F.hdr + SIWX_AREQ_OFF_STAG, v);
			nget(st, "to", 0, &v);
			be64(F.hdr + SIWX_AREQ_OFF_TO, v);
			if (!nget(st, "add", 0, &v))
				nget(st, "swap", 0, &v);
			be64(F.hdr + SIWX_AREQ_OFF_ADD_SWAP, v);
			if (!nget(st, "addmask", 0, &v))
				nget(st, "swapmask", 0, &v);
			be64(F.hdr + SIWX_AREQ_OFF_ADD_SWAP_MASK, v);
			nget(st, "cmp", 0, &v);
			be64(F.hdr + SIWX_AREQ_OFF_COMPARE, v);
			nget(st, "cmpmask", 0, &v);
			be64(F.hdr + SIWX_AREQ_OFF_COMPARE_MASK, v);
			F.hdrlen = SIWX_RDMAP_ATOMIC_REQ_SIZE;
			get_data(st);
		} else if (!strcmp(c, "atomic_resp")) {
			untagged(st, SIWX_DDP_QN_ATOMIC_RESP);
			if (!has_op)
				op = SIWX_RDMAP_OP_ATOMIC_RESP;
			nget(st, "reqid", 0, &v);
			be32(F.hdr + SIWX_ARESP_OFF_REQ_ID, v);
			nget(st, "value", 0, &v);
			be64(F.hdr + SIWX_ARESP_OFF_VALUE, v);
			F.hdrlen = SIWX_RDMAP_ATOMIC_RESP_SIZE;
			get_data(st);
		} else if (!strcmp(c, "imm")) {
			nget(st, "se", 0, &se);
			untagged(st, SIWX_DDP_QN_SEND);
			if (!has_op)
				op = se ? SIWX_RDMAP_OP_IMM_SE : SIWX_RDMAP_OP_IMM;
			if (nget(st, "value", 0, &v)) {
				be64(F.data, v);
				F.datalen = SIWX_RDMAP_IMM_SIZE;
			} else {
				get_data(st);
			}
		} else if (!strcmp(c, "term")) {
			uint64_t layer, etype, code;
			const char *h = sget(st, "hdrs");
			uint32_t w;

			untagged(st, SIWX_DDP_QN_TERMINATE);
			if (!has_op)
				op = SIWX_RDMAP_OP_TERMINATE;
			nget(st, "layer", 0, &layer);
			nget(st, "etype", 0, &etype);
			nget(st, "code", 0, &code);
			w = field_prep(SIWX_TERM_CTRL_LAYER, layer) |
			    field_prep(SIWX_TERM_CTRL_ETYPE, etype) |
			    field_prep(SIWX_TERM_CTRL_ECODE, code);
			if (h) {
				w |= strchr(h, 'M') ? SIWX_TERM_CTRL_FLAG_M : 0;
				w |= strchr(h, 'D') ? SIWX_TERM_CTRL_FLAG_D : 0;
				w |= strchr(h, 'R') ? SIWX_TERM_CTRL_FLAG_R : 0;
			}
			be32(F.hdr, w);
			F.hdrlen = SIWX_RDMAP_TERM_CTRL_SIZE;
			h = sget(st, "attach");
			if (h && parse_hex(h, F.data, sizeof(F.data),
					   &F.datalen))
				die(2, "step '%s': bad attach=", st->text);
		} else if (!strcmp(c, "untagged")) {
			const char *h = sget(st, "hdr");

			untagged(st, SIWX_DDP_QN_SEND);
			if (h && parse_hex(h, F.hdr, sizeof(F.hdr), &F.hdrlen))
				die(2, "step '%s': bad hdr=", st->text);
			get_data(st);
		} else if (!strcmp(c, "tagged")) {
			const char *h = sget(st, "hdr");

			tagged(st, 0, 0);
			if (h && parse_hex(h, F.hdr, sizeof(F.hdr), &F.hdrlen))
				die(2, "step '%s': bad hdr=", st->text);
			get_data(st);
		} else {
			return 0;
		}
		emit(st, (int)op);
		untagged_sent(last);
	}
	return 1;
}

/* ---------------------------------------------------------------- RTR */

static void send_rtr(const char *kind)
{
	struct step st;
	char line[64];

	if (!strcmp(kind, "none"))
		return;
	if (!strcmp(kind, "write"))
		snprintf(line, sizeof(line), "write stag=0 to=0");
	else if (!strcmp(kind, "read"))
		snprintf(line, sizeof(line), "read_req size=0");
	else if (!strcmp(kind, "send"))
		snprintf(line, sizeof(line), "send");
	else
		die(2, "unknown RTR type %s", kind);
	step_parse(&st, line, kind, 0);
	run_fpdu_step(&st);
	tx_flush();
	out("rtr sent=%s\n", kind);
}

/* ---------------------------------------------------------------- script */

static void run_step(char *line, int lineno)
{
	char *text = strdup(line), *nl;
	struct step st;
	uint64_t v;

	if (!text)
		die(1, "out of memory");
	nl = strpbrk(text, "\r\n");
	if (nl)
		*nl = 0;
	step_parse(&st, line, text, lineno);
	if (!st.cmd || st.cmd[0] == '#') {
		free(text);
		return;
	}
	if (run_fpdu_step(&st)) {
		/* done */
	} else if (!strcmp(st.cmd, "raw")) {
		uint8_t *b = malloc(MAX_FRAME);
		size_t n;
		const char *h = sget(&st, "hex");

		if (!b || !h || parse_hex(h, b, MAX_FRAME, &n))
			die(2, "step '%s': raw needs hex=", text);
		step_done(&st);
		tx_queue(b, n);
		free(b);
	} else if (!strcmp(st.cmd, "fpdu")) {
		const char *h = sget(&st, "ulpdu");
		uint8_t *b = malloc(MAX_FRAME);
		size_t n = 0, pad;
		uint32_t c;

		/* (room kept for the length field, pad and CRC) */
		if (!b || (h && parse_hex(h, b + SIWX_MPA_HDR_SIZE,
					  MAX_FRAME - 8, &n)))
			die(2, "step '%s': bad ulpdu=", text);
		nget(&st, "mpalen", n, &v);
		be16(b, v);
		n += SIWX_MPA_HDR_SIZE;
		pad = mpa_pad(n);
		memset(b + n, 0, pad);
		n += pad;
		c = S.crc ? crc32c(b, n) : 0;
		h = sget(&st, "crc");
		if (h && !strcmp(h, "bad"))
			c ^= 1;
		else if (h && !eval(h, &v))
			c = v;
		put_crc(b + n, c);
		n += SIWX_MPA_CRC_SIZE;
		step_done(&st);
		tx_queue(b, n);
		free(b);
	} else if (!strcmp(st.cmd, "sleep")) {
		nget(&st, "ms", 100, &v);
		step_done(&st);
		tx_flush();
		usleep(v * 1000);
	} else if (!strcmp(st.cmd, "rx")) {
		uint64_t until = (uint64_t)-1;
		const char *u;

		nget(&st, "ms", 1000, &v);
		u = sget(&st, "until");
		if (u) {
			if (!strcmp(u, "any"))
				until = 0x100;
			else if (eval(u, &until) || until > SIWX_RDMAP_MASK_OPCODE)
				die(2, "step '%s': bad until=", text);
		}
		step_done(&st);
		rx_for(v, (int)until);
	} else if (!strcmp(st.cmd, "flush")) {
		step_done(&st);
		tx_flush();
	} else if (!strcmp(st.cmd, "shutdown")) {
		step_done(&st);
		tx_flush();
		shutdown(S.fd, SHUT_WR);
		out("shutdown\n");
	} else if (!strcmp(st.cmd, "msn")) {
		/* msn qn=N value=M: set the next MSN of a queue */
		uint64_t q;

		nget(&st, "qn", SIWX_DDP_QN_SEND, &q);
		nget(&st, "value", SIWX_DDP_MSN_FIRST, &v);
		step_done(&st);
		if (q < SIWX_DDP_QN_COUNT)
			S.msn[q] = v;
	} else if (!strcmp(st.cmd, "set")) {
		/* set name=expr ... */
		int i;

		for (i = 0; i < st.ntok; i++) {
			if (eval(st.val[i], &v))
				die(2, "step '%s': bad value", text);
			set_var(st.key[i], strlen(st.key[i]), v);
			st.used[i] = 1;
		}
	} else if (!strcmp(st.cmd, "echo")) {
		int i;

		out("echo");
		for (i = 0; i < st.ntok; i++) {
			st.used[i] = 1;
			out(" %s=%s", st.key[i], st.val[i]);
		}
		out("\n");
	} else {
		die(2, "line %d: unknown step '%s'", lineno, st.cmd);
	}
	free(text);
}

/* ---------------------------------------------------------------- options */

static struct {
	const char *src, *script, *send_rtr, *pdata_hex, *req_hex, *rtr_list;
	uint64_t rev, ird, ord, delay, rx_ms, timeout, accept_count;
	long flags_raw, ird_word, ord_word, pd_len;
	int crc, enhanced, p2p;		/* -1: not given */
	int markers, rev_set, ird_set, ord_set, delay_set;
	uint8_t pdx[SIWX_MPA_MAX_PD];	/* --pdata */
	size_t pdxlen;
	/* responder (--listen) */
	int listen, reject, close_on_enh, no_reply, crc_use;
	const char *reply_hex, *key, *garbage_hex;
} opt;

static void usage(FILE *f)
{
	fprintf(f,
"usage: mpa-peer [options] ADDR PORT [STEP...]\n"
"       mpa-peer --listen [options] ADDR PORT [STEP...]\n"
"\n"
"MPA Request:\n"
"  --rev N            MPA revision (default 2)\n"
"  --crc|--no-crc     ask for CRC (default on); markers are never used\n"
"  --markers          set the M flag anyway (the responder must reject)\n"
"  --flags 0xNN       the whole flags byte, raw (overrides the above)\n"
"  --no-enhanced      rev 2 without the S flag and IRD/ORD word\n"
"  --ird N --ord N    14-bit IRD/ORD in the enhanced word (default 16/16)\n"
"  --p2p              set A (peer-to-peer; an RTR follows the reply)\n"
"  --rtr LIST         RTR types offered with --p2p: send,write,read\n"
"                     (B, C, D flags; default write)\n"
"  --ird-word V --ord-word V   the raw 16-bit words (override)\n"
"  --pdata HEX        private data after the enhanced word\n"
"  --pd-len N         PD_Length field override (the header lies)\n"
"  --req-hex HEX      send these bytes instead of an MPA Request\n"
"Session:\n"
"  --src ADDR         bind this source address\n"
"  --delay MS         pause between reply and first FPDU (default 500;\n"
"                     siw's responder drops data arriving too early)\n"
"  --send-rtr T       RTR to send: auto (as the reply asks), none, send,\n"
"                     write, read (default auto)\n"
"  --rx-ms MS         read this long after the last step (default 3000)\n"
"  --timeout MS       connect and MPA reply limit (default 10000)\n"
"  --coalesce         queue FPDUs and write them at the next rx/sleep/\n"
"                     flush step in one send() (default: one per FPDU)\n"
"  --crc-use on|off   CRC32c on FPDUs after the handshake (default: as the\n"
"                     reply's C flag; responder: C in either frame)\n"
"  --var NAME=EXPR    define a variable\n"
"  --script FILE      more steps, one per line ('-': stdin; # comments)\n"
"\n"
"Responder (--listen): binds ADDR:PORT (port 0: any), accepts connections\n"
"one after the other, reads the MPA Request and answers it (the initiator\n"
"sends the RTR; none is sent), then runs the steps and reads --rx-ms.\n"
"The reply follows the request: rev (1 or 2), C, S (rev 2), A; IRD = the\n"
"request's ORD, ORD = its IRD; with A the RTR flags of --rtr (default\n"
"write). Overrides: --rev --crc --no-crc --markers --flags --enhanced\n"
"--no-enhanced --ird --ord --p2p --no-p2p --rtr (or none) --ird-word\n"
"--ord-word --pdata --pd-len, and:\n"
"  --accept-count N   connections to handle (default 1)\n"
"  --key STRING       reply key (16 bytes, NUL-padded or truncated)\n"
"  --reject           set R\n"
"  --reply-hex HEX    send these bytes instead of an MPA Reply\n"
"  --garbage HEX      send these bytes right after the reply\n"
"  --close-on-enhanced  close without a reply if the request has rev>=2\n"
"                     or S (a rev 1 request is answered)\n"
"  --no-reply         send nothing, read for --rx-ms\n"
"--timeout bounds each accept and each request; --delay defaults to 0;\n"
"--send-rtr T sends an RTR anyway.\n"
"\n"
"Steps (one argument each, or one line of the script): CMD key=value...\n"
"  send      [data=HEX|len=N [fill=B]] [se=1] [inval=STAG] [qn msn mo]\n"
"  write     stag= to= [data=|len=]\n"
"  read_resp stag= to= [data=|len=]\n"
"  read_req  sink_stag= sink_to= size= src_stag= src_to= [qn msn mo]\n"
"  atomic    aop= reqid= stag= to= add=|swap= addmask=|swapmask= cmp=\n"
"            cmpmask= [rsvd=] [qn=1 msn mo]   (reqid auto-increments)\n"
"  atomic_resp reqid= value= [qn=3 msn mo]\n"
"  imm       value=U64 | data=HEX | len=N  [se=1] [qn=0 msn mo]\n"
"  term      layer= etype= code= hdrs=MDR attach=HEX [qn=2 msn mo]\n"
"  untagged  opcode= [hdr=HEX] [data=HEX] [qn msn mo inval]\n"
"  tagged    opcode= stag= to= [hdr=HEX] [data=HEX]\n"
"  fpdu      ulpdu=HEX [mpalen=] [crc=]  (MPA framing only)\n"
"  raw       hex=HEX                     (bytes as they are)\n"
"  rx        [ms=1000] [until=OPCODE|any]  read and print\n"
"  sleep ms=N | flush | shutdown | msn qn=Q value=M | set NAME=EXPR\n"
"Every FPDU step also takes: opcode= l= dv= rv= t= ctrl=0xHHHH mpalen=\n"
"pad= crc=VALUE|bad trunc=N repeat=N. MSNs default to the next one of the\n"
"queue (each of QN 0-3 counts from 1). Numbers are expressions: ${var},\n"
"0x.., decimal joined by + - * ^ | & (left to right). Variables: ird,\n"
"ord, rev, crc from the reply, NAME=0x.. tokens of a text private data\n"
"(e.g. rkey, addr, len from raw_server), and from the last FPDU received:\n"
"rx_opcode rx_qn rx_msn rx_stag rx_to, Read Request rx_sink_stag\n"
"rx_sink_to rx_size, Atomic Request rx_reqid rx_aop rx_astag rx_ato rx_add\n"
"rx_cmp, Atomic Response rx_reqid rx_value. Responder: req_rev req_ird\n"
"req_ord req_a req_b req_c req_d (request), rev (reply sent), crc (in use).\n"
"\n"
"Output: 'reply ...', 'var NAME=...', 'rtr sent=...', one 'rx opcode=0x..\n"
"NAME ...' line per FPDU received, then 'closed' or 'open' (still\n"
"connected when the time was up). Responder: 'listening ADDR:PORT', then\n"
"per connection 'conn N', 'request ...' (or 'request none (closed)'),\n"
"'var ...', 'reply rev= flags= pd_len= bytes= after_key=' (sent), the\n"
"rx lines and 'closed' or 'open'.\n"
"Exit: 0 ran, 1 no connection / no MPA reply, 2 usage or script error.\n");
}

static void parse_pdata_vars(const uint8_t *p, size_t n)
{
	size_t i = 0;

	/* text private data: tokens NAME=NUMBER separated by blanks */
	while (i < n) {
		size_t s, e, eq = 0;
		uint64_t v;
		char num[40];
		char *end;

		while (i < n && (p[i] == ' ' || p[i] == 0 || p[i] == '\n'))
			i++;
		s = i;
		while (i < n && p[i] != ' ' && p[i] != 0 && p[i] != '\n') {
			if (!isprint(p[i]))
				return;
			if (p[i] == '=' && !eq)
				eq = i;
			i++;
		}
		e = i;
		if (!eq || eq == s || e - eq - 1 == 0 ||
		    e - eq - 1 >= sizeof(num))
			continue;
		memcpy(num, p + eq + 1, e - eq - 1);
		num[e - eq - 1] = 0;
		errno = 0;
		v = strtoull(num, &end, 0);
		if (errno || *end)
			continue;
		set_var((const char *)p + s, eq - s, v);
		out("var %.*s=0x%" PRIx64 "\n", (int)(eq - s), p + s, v);
	}
}

static void parse_pdata(void)
{
	if (opt.pdata_hex &&
	    parse_hex(opt.pdata_hex, opt.pdx, sizeof(opt.pdx), &opt.pdxlen))
		die(2, "--pdata: bad hex");
}

/*
 * An MPA Request or Reply: the key (16 bytes), flags, rev, the RFC 6581
 * word when the flags have S (IRD/ORD, A, and with A the RTR flags of
 * --rtr; --ird-word/--ord-word override it), --pdata, and PD_Length (or
 * --pd-len). Returns the length.
 */
static size_t mpa_frame(uint8_t *buf, size_t size, const char *key,
			unsigned int flags, unsigned int rev, uint32_t ird,
			uint32_t ord, int a)
{
	size_t n = SIWX_MPA_RR_HDR_SIZE;
	uint32_t iw, ow;

	memcpy(buf, key, SIWX_MPA_KEY_SIZE);
	buf[SIWX_MPA_OFF_FLAGS] = flags;
	buf[SIWX_MPA_OFF_REV] = rev;
	if (flags & SIWX_MPA_FLAG_S) {
		iw = (ird & SIWX_MPA_V2_IRD_ORD_MASK) | (a ? SIWX_MPA_V2_IRD_A : 0);
		ow = ord & SIWX_MPA_V2_IRD_ORD_MASK;
		if (a) {
			if (strstr(opt.rtr_list, "send"))
				iw |= SIWX_MPA_V2_IRD_B;
			if (strstr(opt.rtr_list, "write"))
				ow |= SIWX_MPA_V2_ORD_C;
			if (strstr(opt.rtr_list, "read"))
				ow |= SIWX_MPA_V2_ORD_D;
		}
		if (opt.ird_word >= 0)
			iw = opt.ird_word;
		if (opt.ord_word >= 0)
			ow = opt.ord_word;
		be16(buf + n + SIWX_MPA_V2_OFF_IRD, iw);
		be16(buf + n + SIWX_MPA_V2_OFF_ORD, ow);
		n += SIWX_MPA_V2_HDR_SIZE;
	}
	if (n + opt.pdxlen > size)
		die(2, "private data too long");
	memcpy(buf + n, opt.pdx, opt.pdxlen);
	n += opt.pdxlen;
	be16(buf + SIWX_MPA_OFF_PD_LEN, opt.pd_len >= 0 ? (uint32_t)opt.pd_len :
	     (uint32_t)(n - SIWX_MPA_RR_HDR_SIZE));
	return n;
}

/*
 * Print a received MPA Request/Reply as one line: hdr -> the 20-byte
 * header, followed by got bytes of the private data (got < PD_Length: not
 * all of it arrived; pd_got= says how much did). key: the expected key,
 * printed as key=ok|bad (Requests). Returns whether it carries the RFC 6581
 * word (S set, PD_Length >= 4), and the word in *iw, *ow.
 */
static int print_mpa(const char *what, const uint8_t *hdr, size_t got,
		     const char *key, uint32_t *iw, uint32_t *ow)
{
	static char line[2 * 65536 + 400], hex[2 * 65536 + 8];
	unsigned int flags = hdr[SIWX_MPA_OFF_FLAGS];
	size_t pdlen = rd16(hdr + SIWX_MPA_OFF_PD_LEN), skip = 0, o;
	const uint8_t *pd = hdr + SIWX_MPA_RR_HDR_SIZE;
	int enh = (flags & SIWX_MPA_FLAG_S) && pdlen >= SIWX_MPA_V2_HDR_SIZE &&
		  got >= SIWX_MPA_V2_HDR_SIZE;

	*iw = 0;
	*ow = 0;
	if (enh) {
		*iw = rd16(pd + SIWX_MPA_V2_OFF_IRD);
		*ow = rd16(pd + SIWX_MPA_V2_OFF_ORD);
		skip = SIWX_MPA_V2_HDR_SIZE;
	}
	o = snprintf(line, sizeof(line),
		     "%s rev=%u flags=0x%02x m=%d c=%d r=%d s=%d pd_len=%zu",
		     what, hdr[SIWX_MPA_OFF_REV], flags, !!(flags & SIWX_MPA_FLAG_M),
		     !!(flags & SIWX_MPA_FLAG_C), !!(flags & SIWX_MPA_FLAG_R),
		     !!(flags & SIWX_MPA_FLAG_S), pdlen);
	if (key)
		o += snprintf(line + o, sizeof(line) - o, " key=%s",
			      memcmp(hdr, key, SIWX_MPA_KEY_SIZE) ? "bad" : "ok");
	if (enh)
		o += snprintf(line + o, sizeof(line) - o,
			      " ird=%u ord=%u a=%d b=%d c_rtr=%d d_rtr=%d ird_word=0x%04x ord_word=0x%04x",
			      *iw & SIWX_MPA_V2_IRD_ORD_MASK, *ow & SIWX_MPA_V2_IRD_ORD_MASK, !!(*iw & SIWX_MPA_V2_IRD_A),
			      !!(*iw & SIWX_MPA_V2_IRD_B), !!(*ow & SIWX_MPA_V2_ORD_C),
			      !!(*ow & SIWX_MPA_V2_ORD_D), *iw, *ow);
	hexstr(hex, sizeof(hex), pd + skip, got - skip);
	if (got < pdlen)
		out("%s pdata=%s pd_got=%zu\n", line, hex, got);
	else
		out("%s pdata=%s\n", line, hex);
	return enh;
}

/* The steps (command line, then --script), then read for --rx-ms. */
static void run_session(char **steps, int nsteps, FILE *(*script)(void))
{
	char hex[2 * 64 + 8];
	int i;

	for (i = 0; i < nsteps; i++) {
		char *l = strdup(steps[i]);

		if (!l)
			die(1, "out of memory");
		run_step(l, 0);
		free(l);
		if (S.closed)
			break;
	}
	if (script && opt.script && !S.closed) {
		FILE *f = script();
		char line[8192];
		int ln = 0;

		while (f && fgets(line, sizeof(line), f) && !S.closed) {
			ln++;
			run_step(line, ln);
		}
		if (f && f != stdin)
			fclose(f);
	}
	tx_flush();
	rx_for(opt.rx_ms, -1);
	if (S.rxlen) {
		hexstr(hex, sizeof(hex), S.rx, S.rxlen > 64 ? 64 : S.rxlen);
		out("rx-partial bytes=%zu head=%s\n", S.rxlen, hex);
	}
	out(S.closed ? "closed\n" : "open\n");
}

/* client: the script is read as the steps run ('-': stdin) */
static FILE *client_script(void)
{
	FILE *f = strcmp(opt.script, "-") ? fopen(opt.script, "r") : stdin;

	if (!f)
		die(2, "%s: %s", opt.script, strerror(errno));
	return f;
}

/* ---------------------------------------------------------------- listen */

/* responder: the script, read once, runs for every connection */
static char *script_buf;
static size_t script_len;

static FILE *listen_script(void)
{
	FILE *f;

	if (!script_len)
		return NULL;
	f = fmemopen(script_buf, script_len, "r");
	if (!f)
		die(1, "fmemopen: %s", strerror(errno));
	return f;
}

static void load_script(void)
{
	FILE *f = strcmp(opt.script, "-") ? fopen(opt.script, "r") : stdin;
	size_t cap = 0, n;

	if (!f)
		die(2, "%s: %s", opt.script, strerror(errno));
	do {
		if (script_len == cap) {
			cap = cap ? 2 * cap : 8192;
			script_buf = realloc(script_buf, cap);
			if (!script_buf)
				die(1, "out of memory");
		}
		n = fread(script_buf + script_len, 1, cap - script_len, f);
		script_len += n;
	} while (n);
	if (f != stdin)
		fclose(f);
}

static uint8_t rep_hex[MAX_FRAME], garbage[MAX_FRAME];
static size_t rep_hexlen, garbage_len;

/*
 * One accepted connection (S.fd): read and print the MPA Request, answer
 * it (or not), run the steps, read for --rx-ms.
 */
static void serve(int conn, char **steps, int nsteps)
{
	static uint8_t rep[MAX_FRAME];
	static char hex[2 * MAX_FRAME + 8];
	uint64_t end = now_ms() + opt.timeout, t;
	unsigned int qflags, qrev, flags, rev;
	uint32_t qiw, qow, ird, ord;
	size_t pdlen, got, replen, skip;
	int qenh, a, rep_c, c;
	char key[SIWX_MPA_KEY_SIZE];

	out("conn %d\n", conn);

	/* ---- MPA Request */
	if (rx_exact(SIWX_MPA_RR_HDR_SIZE, opt.timeout)) {
		out("request none (%s)\n", S.closed ? "closed" : "timeout");
		return;
	}
	pdlen = rd16(S.rx + SIWX_MPA_OFF_PD_LEN);
	t = now_ms();
	if (rx_exact(SIWX_MPA_RR_HDR_SIZE + pdlen, end > t ? end - t : 0) &&
	    S.closed) {
		out("request none (closed)\n");
		return;
	}
	got = S.rxlen - SIWX_MPA_RR_HDR_SIZE < pdlen ?
	      S.rxlen - SIWX_MPA_RR_HDR_SIZE : pdlen;
	qflags = S.rx[SIWX_MPA_OFF_FLAGS];
	qrev = S.rx[SIWX_MPA_OFF_REV];
	qenh = print_mpa("request", S.rx, got, SIWX_MPA_KEY_REQ, &qiw, &qow);
	set_var("req_rev", 7, qrev);
	set_var("req_a", 5, !!(qiw & SIWX_MPA_V2_IRD_A));
	set_var("req_b", 5, !!(qiw & SIWX_MPA_V2_IRD_B));
	set_var("req_c", 5, !!(qow & SIWX_MPA_V2_ORD_C));
	set_var("req_d", 5, !!(qow & SIWX_MPA_V2_ORD_D));
	if (qenh) {
		set_var("req_ird", 7, qiw & SIWX_MPA_V2_IRD_ORD_MASK);
		set_var("req_ord", 7, qow & SIWX_MPA_V2_IRD_ORD_MASK);
	} else {
		unset_var("req_ird");
		unset_var("req_ord");
	}
	skip = qenh ? SIWX_MPA_V2_HDR_SIZE : 0;
	parse_pdata_vars(S.rx + SIWX_MPA_RR_HDR_SIZE + skip, got - skip);
	S.crc_req = !!(qflags & SIWX_MPA_FLAG_C);
	memmove(S.rx, S.rx + SIWX_MPA_RR_HDR_SIZE + got,
		S.rxlen - SIWX_MPA_RR_HDR_SIZE - got);
	S.rxlen -= SIWX_MPA_RR_HDR_SIZE + got;

	if (opt.close_on_enh &&
	    (qrev >= SIWX_MPA_REV_2 || (qflags & SIWX_MPA_FLAG_S))) {
		out("closing on enhanced request\n");
		return;
	}
	if (opt.no_reply) {
		out("reply none\n");
		S.crc = opt.crc_use >= 0 ? opt.crc_use : S.crc_req;
		set_var("crc", 3, S.crc);
		run_session(NULL, 0, NULL);
		return;
	}

	/* ---- MPA Reply */
	if (opt.reply_hex) {
		memcpy(rep, rep_hex, rep_hexlen);
		replen = rep_hexlen;
		if (replen < SIWX_MPA_RR_HDR_SIZE)	/* keep the header defined */
			memset(rep + replen, 0, SIWX_MPA_RR_HDR_SIZE - replen);
		rep_c = replen > SIWX_MPA_OFF_FLAGS &&
			(rep[SIWX_MPA_OFF_FLAGS] & SIWX_MPA_FLAG_C);
	} else {
		rev = opt.rev_set ? opt.rev :
		      qrev <= SIWX_MPA_REV_1 ? SIWX_MPA_REV_1 : SIWX_MPA_REV_2;
		flags = (opt.crc >= 0 ? opt.crc : S.crc_req) ? SIWX_MPA_FLAG_C : 0;
		if (opt.markers)
			flags |= SIWX_MPA_FLAG_M;
		if (opt.reject)
			flags |= SIWX_MPA_FLAG_R;
		if (opt.enhanced >= 0 ? opt.enhanced :
		    (qflags & SIWX_MPA_FLAG_S) && rev >= SIWX_MPA_REV_2)
			flags |= SIWX_MPA_FLAG_S;
		if (opt.flags_raw >= 0)
			flags = opt.flags_raw;
		a = opt.p2p >= 0 ? opt.p2p : qenh && (qiw & SIWX_MPA_V2_IRD_A);
		/* IRD = the request's ORD, ORD = its IRD, unless --ird/--ord */
		ird = !opt.ird_set && qenh ? qow & SIWX_MPA_V2_IRD_ORD_MASK :
		      opt.ird;
		ord = !opt.ord_set && qenh ? qiw & SIWX_MPA_V2_IRD_ORD_MASK :
		      opt.ord;
		memset(key, 0, sizeof(key));
		if (opt.key)
			memcpy(key, opt.key, strnlen(opt.key, sizeof(key)));
		else
			memcpy(key, SIWX_MPA_KEY_REP, sizeof(key));
		replen = mpa_frame(rep, sizeof(rep), key, flags, rev, ird, ord,
				   a);
		rep_c = !!(rep[SIWX_MPA_OFF_FLAGS] & SIWX_MPA_FLAG_C);
	}
	hexstr(hex, sizeof(hex), rep + SIWX_MPA_KEY_SIZE,
	       replen > SIWX_MPA_KEY_SIZE ? replen - SIWX_MPA_KEY_SIZE : 0);
	out("reply rev=%u flags=0x%02x pd_len=%u bytes=%zu after_key=%s\n",
	    rep[SIWX_MPA_OFF_REV], rep[SIWX_MPA_OFF_FLAGS],
	    rd16(rep + SIWX_MPA_OFF_PD_LEN), replen, hex);
	c = S.coalesce;
	S.coalesce = 1;
	tx_queue(rep, replen);
	if (garbage_len) {
		hexstr(hex, sizeof(hex), garbage, garbage_len);
		out("garbage bytes=%zu data=%s\n", garbage_len, hex);
		tx_queue(garbage, garbage_len);
	}
	tx_flush();
	S.coalesce = c;

	S.crc = opt.crc_use >= 0 ? opt.crc_use : S.crc_req || rep_c;
	if (S.crc_req != rep_c || opt.crc_use >= 0)
		out("note crc requested=%d reply=%d use=%d\n", S.crc_req,
		    rep_c, S.crc);
	set_var("rev", 3, rep[SIWX_MPA_OFF_REV]);
	set_var("crc", 3, S.crc);

	/* anything that came with the request */
	rx_parse();
	if (opt.delay)
		usleep(opt.delay * 1000);
	if (strcmp(opt.send_rtr, "auto"))
		send_rtr(opt.send_rtr);
	run_session(steps, nsteps, listen_script);
}

static int listen_main(const char *addr, const char *port, char **steps,
		       int nsteps)
{
	struct addrinfo hints = {
		.ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM
	}, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	unsigned int lport = 0;
	int lfd, one = 1, rc, i, served = 0;

	parse_pdata();
	if (opt.reply_hex &&
	    parse_hex(opt.reply_hex, rep_hex,
		      sizeof(rep_hex) - SIWX_MPA_RR_HDR_SIZE,
		      &rep_hexlen))
		die(2, "--reply-hex: bad hex");
	if (opt.garbage_hex &&
	    parse_hex(opt.garbage_hex, garbage, sizeof(garbage), &garbage_len))
		die(2, "--garbage: bad hex");
	if (opt.script)
		load_script();

	rc = getaddrinfo(addr, port, &hints, &ai);
	if (rc)
		die(2, "%s:%s: %s", addr, port, gai_strerror(rc));
	lfd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (lfd < 0)
		die(1, "socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 16))
		die(1, "listen %s:%s: %s", addr, port, strerror(errno));
	freeaddrinfo(ai);
	if (!getsockname(lfd, (struct sockaddr *)&ss, &sl))
		lport = ntohs(ss.ss_family == AF_INET6 ?
			      ((struct sockaddr_in6 *)&ss)->sin6_port :
			      ((struct sockaddr_in *)&ss)->sin_port);
	out("listening %s:%u\n", addr, lport);

	for (i = 1; (uint64_t)i <= opt.accept_count; i++) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };
		uint64_t end = now_ms() + opt.timeout, t;
		int fd = -1, k;

		while ((t = now_ms()) < end) {
			k = poll(&pfd, 1, (int)(end - t));
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				die(1, "poll: %s", strerror(errno));
			if (!k)
				break;
			fd = accept(lfd, NULL, NULL);
			if (fd >= 0)
				break;
			if (errno != EINTR && errno != EAGAIN &&
			    errno != ECONNABORTED)
				die(1, "accept: %s", strerror(errno));
		}
		if (fd < 0) {
			out("accept timeout\n");
			break;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		for (k = 0; k < SIWX_DDP_QN_COUNT; k++)
			S.msn[k] = SIWX_DDP_MSN_FIRST;
		S.fd = fd;
		S.reqid = 1;
		S.crc = 0;
		S.crc_req = 0;
		S.rxlen = 0;
		S.txlen = 0;
		S.closed = 0;
		S.rx_fpdus = 0;
		S.terms = 0;
		serve(i, steps, nsteps);
		close(S.fd);
		S.fd = -1;
		served++;
	}
	close(lfd);
	return served ? 0 : 1;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	const char *listen_only = NULL;
	uint64_t v;
	int i, rc;
	uint8_t req[SIWX_MPA_RR_HDR_SIZE + SIWX_MPA_MAX_PD + 64];
	size_t reqlen, pdlen;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char hex[2 * SIWX_MPA_MAX_PD + 8];
	uint8_t rflags;
	int argi;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	crc32c_init();
	S.fd = -1;
	S.reqid = 1;
	for (i = 0; i < SIWX_DDP_QN_COUNT; i++)
		S.msn[i] = SIWX_DDP_MSN_FIRST;
	opt.send_rtr = "auto";
	opt.rtr_list = "write";
	opt.rev = SIWX_MPA_REV_2;
	opt.ird = 16;
	opt.ord = 16;
	opt.delay = 500;
	opt.rx_ms = 3000;
	opt.timeout = 10000;
	opt.accept_count = 1;
	opt.flags_raw = -1;
	opt.ird_word = -1;
	opt.ord_word = -1;
	opt.pd_len = -1;
	opt.crc = -1;
	opt.enhanced = -1;
	opt.p2p = -1;
	opt.crc_use = -1;

	for (argi = 1; argi < argc && argv[argi][0] == '-' && argv[argi][1] == '-';
	     argi++) {
		const char *o = argv[argi], *a = argi + 1 < argc ? argv[argi + 1] : NULL;
		int takes = 1;

#define NUM(dst) do { if (!a || eval(a, &v)) die(2, "%s: bad number", o); dst = v; } while (0)
		if (!strcmp(o, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(o, "--")) {
			argi++;
			break;
		} else if (!strcmp(o, "--rev")) {
			NUM(opt.rev);
			opt.rev_set = 1;
		} else if (!strcmp(o, "--crc")) {
			opt.crc = 1; takes = 0;
		} else if (!strcmp(o, "--no-crc")) {
			opt.crc = 0; takes = 0;
		} else if (!strcmp(o, "--markers")) {
			opt.markers = 1; takes = 0;
		} else if (!strcmp(o, "--flags")) {
			NUM(opt.flags_raw);
		} else if (!strcmp(o, "--no-enhanced")) {
			opt.enhanced = 0; takes = 0;
		} else if (!strcmp(o, "--enhanced")) {
			opt.enhanced = 1; takes = 0;
		} else if (!strcmp(o, "--ird")) {
			NUM(opt.ird);
			opt.ird_set = 1;
		} else if (!strcmp(o, "--ord")) {
			NUM(opt.ord);
			opt.ord_set = 1;
		} else if (!strcmp(o, "--p2p")) {
			opt.p2p = 1; takes = 0;
		} else if (!strcmp(o, "--no-p2p")) {
			opt.p2p = 0; takes = 0;
		} else if (!strcmp(o, "--rtr")) {
			if (!a)
				die(2, "--rtr needs a list");
			opt.rtr_list = a;
		} else if (!strcmp(o, "--ird-word")) {
			NUM(opt.ird_word);
		} else if (!strcmp(o, "--ord-word")) {
			NUM(opt.ord_word);
		} else if (!strcmp(o, "--pdata")) {
			opt.pdata_hex = a;
		} else if (!strcmp(o, "--pd-len")) {
			NUM(opt.pd_len);
		} else if (!strcmp(o, "--req-hex")) {
			opt.req_hex = a;
		} else if (!strcmp(o, "--src")) {
			opt.src = a;
		} else if (!strcmp(o, "--delay")) {
			NUM(opt.delay);
			opt.delay_set = 1;
		} else if (!strcmp(o, "--send-rtr")) {
			opt.send_rtr = a;
		} else if (!strcmp(o, "--rx-ms")) {
			NUM(opt.rx_ms);
		} else if (!strcmp(o, "--timeout")) {
			NUM(opt.timeout);
		} else if (!strcmp(o, "--coalesce")) {
			S.coalesce = 1; takes = 0;
		} else if (!strcmp(o, "--crc-use")) {
			if (a && (!strcmp(a, "on") || !strcmp(a, "1")))
				opt.crc_use = 1;
			else if (a && (!strcmp(a, "off") || !strcmp(a, "0")))
				opt.crc_use = 0;
			else
				die(2, "--crc-use on|off");
		} else if (!strcmp(o, "--var")) {
			const char *eq = a ? strchr(a, '=') : NULL;

			if (!eq || eval(eq + 1, &v))
				die(2, "--var NAME=EXPR");
			set_var(a, eq - a, v);
		} else if (!strcmp(o, "--script")) {
			opt.script = a;
		} else if (!strcmp(o, "--listen")) {
			opt.listen = 1; takes = 0;
		} else if (!strcmp(o, "--accept-count")) {
			NUM(opt.accept_count);
			listen_only = o;
		} else if (!strcmp(o, "--reply-hex")) {
			opt.reply_hex = a;
			listen_only = o;
		} else if (!strcmp(o, "--key")) {
			opt.key = a;
			listen_only = o;
		} else if (!strcmp(o, "--reject")) {
			opt.reject = 1; takes = 0;
			listen_only = o;
		} else if (!strcmp(o, "--close-on-enhanced")) {
			opt.close_on_enh = 1; takes = 0;
			listen_only = o;
		} else if (!strcmp(o, "--no-reply")) {
			opt.no_reply = 1; takes = 0;
			listen_only = o;
		} else if (!strcmp(o, "--garbage")) {
			opt.garbage_hex = a;
			listen_only = o;
		} else {
			usage(stderr);
			die(2, "unknown option %s", o);
		}
#undef NUM
		if (takes) {
			if (!a)
				die(2, "%s needs an argument", o);
			argi++;
		}
	}
	if (argc - argi < 2) {
		usage(stderr);
		return 2;
	}
	if (!opt.send_rtr)
		die(2, "--send-rtr needs an argument");
	if (opt.listen) {
		if (opt.req_hex || opt.src)
			die(2, "%s: not with --listen",
			    opt.req_hex ? "--req-hex" : "--src");
		if (!opt.accept_count)
			die(2, "--accept-count: at least 1");
		if (!opt.delay_set)
			opt.delay = 0;
		return listen_main(argv[argi], argv[argi + 1], argv + argi + 2,
				   argc - argi - 2);
	}
	if (listen_only)
		die(2, "%s: only with --listen", listen_only);

	/* ---- connect */
	rc = getaddrinfo(argv[argi], argv[argi + 1], &hints, &ai);
	if (rc)
		die(2, "%s:%s: %s", argv[argi], argv[argi + 1], gai_strerror(rc));
	S.fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (S.fd < 0)
		die(1, "socket: %s", strerror(errno));
	if (opt.src) {
		struct addrinfo *sa;

		if (getaddrinfo(opt.src, NULL, &hints, &sa) ||
		    bind(S.fd, sa->ai_addr, sa->ai_addrlen))
			die(1, "bind %s: %s", opt.src, strerror(errno));
		freeaddrinfo(sa);
	}
	{
		uint64_t end = now_ms() + opt.timeout;
		int one = 1;

		for (;;) {
			if (!connect(S.fd, ai->ai_addr, ai->ai_addrlen))
				break;
			if ((errno != ECONNREFUSED && errno != EINTR) ||
			    now_ms() > end)
				die(1, "connect %s:%s: %s", argv[argi],
				    argv[argi + 1], strerror(errno));
			/* listener not up yet: a new socket and retry */
			close(S.fd);
			usleep(200000);
			S.fd = socket(ai->ai_family, SOCK_STREAM, 0);
			if (S.fd < 0)
				die(1, "socket: %s", strerror(errno));
		}
		setsockopt(S.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	freeaddrinfo(ai);
	out("connected %s:%s\n", argv[argi], argv[argi + 1]);

	/* ---- MPA Request */
	parse_pdata();
	if (opt.req_hex) {
		if (parse_hex(opt.req_hex, req, sizeof(req), &reqlen))
			die(2, "--req-hex: bad hex");
		if (reqlen < SIWX_MPA_RR_HDR_SIZE)	/* keep the printout defined */
			memset(req + reqlen, 0, SIWX_MPA_RR_HDR_SIZE - reqlen);
	} else {
		unsigned int flags;

		flags = (opt.crc ? SIWX_MPA_FLAG_C : 0) |
			(opt.markers ? SIWX_MPA_FLAG_M : 0) |
			(opt.rev >= SIWX_MPA_REV_2 && opt.enhanced ?
			 SIWX_MPA_FLAG_S : 0);
		if (opt.flags_raw >= 0)
			flags = opt.flags_raw;
		reqlen = mpa_frame(req, sizeof(req), SIWX_MPA_KEY_REQ, flags,
				   opt.rev, opt.ird, opt.ord, opt.p2p > 0);
	}
	hexstr(hex, sizeof(hex), req + SIWX_MPA_KEY_SIZE,
	       reqlen > SIWX_MPA_KEY_SIZE ? reqlen - SIWX_MPA_KEY_SIZE : 0);
	out("request rev=%u flags=0x%02x pd_len=%u bytes=%zu after_key=%s\n",
	    req[SIWX_MPA_OFF_REV], req[SIWX_MPA_OFF_FLAGS],
	    rd16(req + SIWX_MPA_OFF_PD_LEN), reqlen, hex);
	S.crc_req = !!(req[SIWX_MPA_OFF_FLAGS] & SIWX_MPA_FLAG_C);
	S.txlen = 0;
	{
		int c = S.coalesce;

		S.coalesce = 0;
		tx_queue(req, reqlen);
		S.coalesce = c;
	}

	/* ---- MPA Reply */
	if (rx_exact(SIWX_MPA_RR_HDR_SIZE, opt.timeout)) {
		hexstr(hex, sizeof(hex), S.rx, S.rxlen);
		out("no-reply got=%zu bytes=%s%s\n", S.rxlen, hex,
		    S.closed ? " closed" : "");
		out(S.closed ? "closed\n" : "open\n");
		return 1;
	}
	if (memcmp(S.rx, SIWX_MPA_KEY_REP, SIWX_MPA_KEY_SIZE)) {
		hexstr(hex, sizeof(hex), S.rx, SIWX_MPA_RR_HDR_SIZE);
		out("bad-reply key=%s\n", hex);
		return 1;
	}
	rflags = S.rx[SIWX_MPA_OFF_FLAGS];
	pdlen = rd16(S.rx + SIWX_MPA_OFF_PD_LEN);
	if (pdlen > SIWX_MPA_MAX_PD ||
	    rx_exact(SIWX_MPA_RR_HDR_SIZE + pdlen, opt.timeout)) {
		out("bad-reply pd_len=%zu (not received)\n", pdlen);
		return 1;
	}
	{
		uint8_t *pd = S.rx + SIWX_MPA_RR_HDR_SIZE;
		uint32_t iw, ow;
		size_t skip;
		int enh = print_mpa("reply", S.rx, pdlen, NULL, &iw, &ow);

		skip = enh ? SIWX_MPA_V2_HDR_SIZE : 0;
		set_var("rev", 3, S.rx[SIWX_MPA_OFF_REV]);
		set_var("crc", 3, !!(rflags & SIWX_MPA_FLAG_C));
		if (enh) {
			set_var("ird", 3, iw & SIWX_MPA_V2_IRD_ORD_MASK);
			set_var("ord", 3, ow & SIWX_MPA_V2_IRD_ORD_MASK);
		}
		parse_pdata_vars(pd + skip, pdlen - skip);
		S.crc = !!(rflags & SIWX_MPA_FLAG_C);
		memmove(S.rx, S.rx + SIWX_MPA_RR_HDR_SIZE + pdlen,
			S.rxlen - SIWX_MPA_RR_HDR_SIZE - pdlen);
		S.rxlen -= SIWX_MPA_RR_HDR_SIZE + pdlen;
		if (rflags & SIWX_MPA_FLAG_R) {
			out("rejected\n");
			rx_for(opt.rx_ms, -1);
			out(S.closed ? "closed\n" : "open\n");
			return 0;
		}
		if (S.crc != S.crc_req)
			out("note crc requested=%d reply=%d\n", S.crc_req, S.crc);
		if (opt.crc_use >= 0) {
			S.crc = opt.crc_use;
			out("note crc use=%d (forced)\n", S.crc);
			set_var("crc", 3, S.crc);
		}

		/* anything that came with the reply */
		rx_parse();

		if (opt.delay)
			usleep(opt.delay * 1000);
		if (!strcmp(opt.send_rtr, "auto")) {
			if (enh && (iw & SIWX_MPA_V2_IRD_A)) {
				if (ow & SIWX_MPA_V2_ORD_C)
					send_rtr("write");
				else if (ow & SIWX_MPA_V2_ORD_D)
					send_rtr("read");
				else if (iw & SIWX_MPA_V2_IRD_B)
					send_rtr("send");
				else
					out("rtr sent=none (reply selects no RTR)\n");
			}
		} else {
			send_rtr(opt.send_rtr);
		}
	}

	/* ---- steps */
	run_session(argv + argi + 2, argc - argi - 2, client_script);
	close(S.fd);
	return 0;
}
