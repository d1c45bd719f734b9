/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * mpa-peer.h - what the units of mpa-peer share: the connection state,
 * the options, a script step, and every function one unit calls in
 * another. Wire constants come from <siwx/wire.h> only.
 *
 * Units (see README, "Source layout"):
 *   main.c     main(), the initiator run and the responder's accept loop
 *   options.c  usage text and command line options
 *   mpa.c      MPA Request/Reply, both roles; the RTR the reply asks for
 *   script.c   steps: parsing, key lookup, control steps, the session
 *   fpdu_tx.c  FPDU steps: building and sending frames
 *   fpdu_rx.c  receive side: one printed line per FPDU
 *   net.c      sockets: connect, listen/accept, send queue, reads
 *   expr.c     variables, number expressions, hex strings
 *   crc.c      CRC32c
 *   util.c     die(), out(), hexstr(), now_ms()
 */
#ifndef MPA_PEER_H
#define MPA_PEER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <siwx/wire.h>

/* limits of this program (not of the protocol) */
#define MAX_VARS	64		/* variables */
#define MAX_TOK		64		/* key=value arguments of a step */
#define MAX_FRAME	(70 * 1024)	/* one frame built by a step */
#define RXBUF		(256 * 1024)	/* receive buffer */

/* rx_for()/rx_parse() 'until': any FPDU, or none (read the whole time) */
#define RX_UNTIL_ANY	0x100
#define RX_UNTIL_NONE	(-1)

/* ---------------------------------------------------------------- state */

/* the one connection (zeroed .bss; main() and the accept loop set it up) */
struct state {
	int fd;
	int crc;		/* CRC in use on FPDUs (negotiated or forced) */
	int crc_req;		/* CRC requested */
	uint32_t msn[SIWX_DDP_QN_COUNT];	/* next MSN per untagged queue */
	uint32_t reqid;		/* next atomic request id */
	uint8_t rx[RXBUF];
	size_t rxlen;
	int closed;
	uint8_t tx[MAX_FRAME * 4];
	size_t txlen;
	int coalesce;
	int rx_fpdus;
	int terms;
};
extern struct state S;

/* the command line (options.c) */
struct options {
	const char *src, *script, *send_rtr, *pdata_hex, *req_hex, *rtr_list;
	uint64_t rev, ird, ord, delay, rx_ms, timeout, accept_count, early;
	long flags_raw, ird_word, ord_word, pd_len;	/* -1: not given */
	int crc, enhanced, p2p;				/* -1: not given */
	int markers, rev_set, ird_set, ord_set, delay_set;
	uint8_t pdx[SIWX_MPA_MAX_PD];	/* --pdata */
	size_t pdxlen;
	/* responder (--listen) */
	int listen, reject, close_on_enh, no_reply, crc_use;
	const char *reply_hex, *key, *garbage_hex;
	const char *listen_only;	/* the last responder-only option given */
};
extern struct options opt;

/* one step: CMD key=value... (script.c) */
struct step {
	char *cmd;
	int ntok;
	char *key[MAX_TOK];
	char *val[MAX_TOK];
	int used[MAX_TOK];
	const char *text;	/* for messages */
	int lineno;
};

/* ---------------------------------------------------------------- bytes */

static inline void be16(uint8_t *p, uint32_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline void be64(uint8_t *p, uint64_t v)
{
	be32(p, v >> 32);
	be32(p + 4, v);
}

static inline uint32_t rd16(const uint8_t *p)
{
	return p[0] << 8 | p[1];
}

static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static inline uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) << 32 | rd32(p + 4);
}

/* v placed in the bits of mask (the kernel's FIELD_PREP) */
static inline uint32_t field_prep(uint32_t mask, uint64_t v)
{
	return (uint32_t)(v << __builtin_ctz(mask)) & mask;
}

/* MPA pad bytes after n bytes of length field and ULPDU */
static inline size_t mpa_pad(size_t n)
{
	return (SIWX_MPA_PAD_ALIGN - n % SIWX_MPA_PAD_ALIGN) % SIWX_MPA_PAD_ALIGN;
}

/* ---------------------------------------------------------------- util.c */

void __attribute__((noreturn, format(printf, 2, 3)))
die(int rc, const char *fmt, ...);
void __attribute__((format(printf, 1, 2))) out(const char *fmt, ...);
/* non-zero: out() prints nothing (tools that link these units) */
extern int out_quiet;
void hexstr(char *dst, size_t dstlen, const uint8_t *p, size_t n);
uint64_t now_ms(void);

/* ---------------------------------------------------------------- crc.c */

void crc32c_init(void);
uint32_t crc32c(const uint8_t *p, size_t n);
void put_crc(uint8_t *p, uint32_t c);
uint32_t get_crc(const uint8_t *p);

/* ---------------------------------------------------------------- expr.c */

void set_var(const char *name, size_t nlen, uint64_t val);
int get_var(const char *name, size_t nlen, uint64_t *val);
void unset_var(const char *name);
int eval(const char *s, uint64_t *out);
int parse_hex(const char *s, uint8_t *buf, size_t max, size_t *n);

/* ---------------------------------------------------------------- script.c */

void step_parse(struct step *st, char *line, const char *text, int lineno);
const char *sget(struct step *st, const char *key);
int nget(struct step *st, const char *key, uint64_t dflt, uint64_t *v);
void step_done(struct step *st);
void run_steps(char **steps, int nsteps);
void run_session(char **steps, int nsteps, FILE *(*script)(void));
FILE *client_script(void);
FILE *listen_script(void);
void load_script(void);

/* ---------------------------------------------------------------- fpdu_tx.c */

int run_fpdu_step(struct step *st);
int run_frame_step(struct step *st);
void send_rtr(const char *kind);

/* ---------------------------------------------------------------- fpdu_rx.c */

int rx_parse(int until);
/*
 * Called for every FPDU received, before it is printed: p -> the DDP
 * control byte, len the ULPDU length, crcs as printed (ok, bad, none,
 * nonzero). NULL (the default): none.
 */
extern void (*rx_hook)(const uint8_t *p, size_t len, const char *crcs);

/* ---------------------------------------------------------------- net.c */

void conn_init(int fd);
int tcp_connect(const char *addr, const char *port, const char *src,
		uint64_t timeout);
int tcp_listen(const char *addr, const char *port);
int tcp_accept(int lfd, uint64_t timeout);
void tx_flush(void);
void tx_queue(const uint8_t *p, size_t n);
void rx_for(uint64_t ms, int until);
int rx_exact(size_t n, uint64_t ms);

/* ---------------------------------------------------------------- mpa.c */

int mpa_initiate(char **early, int nearly);
int mpa_respond(void);
void mpa_responder_setup(void);

/* ---------------------------------------------------------------- options.c */

void usage(FILE *f);
int parse_options(int argc, char **argv);

#endif /* MPA_PEER_H */
