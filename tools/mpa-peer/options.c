// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mpa-peer: the command line. usage(), and the options: one table row
 * each, read by parse_options().
 */
#include <stdlib.h>
#include <string.h>

#include "mpa-peer.h"

struct options opt;

void usage(FILE *f)
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
"                     upstream siw's responder loses data arriving early)\n"
"  --early N          run the first N steps --delay ms after the MPA\n"
"                     Request, before the Reply is read (CRC as requested;\n"
"                     RFC 5044 forbids it: data the responder's socket\n"
"                     holds when its QP takes it over)\n"
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

static void opt_rtr(const char *o, const char *a)
{
	(void)o;
	if (!a)
		die(2, "--rtr needs a list");
	opt.rtr_list = a;
}

static void opt_crc_use(const char *o, const char *a)
{
	(void)o;
	if (a && (!strcmp(a, "on") || !strcmp(a, "1")))
		opt.crc_use = 1;
	else if (a && (!strcmp(a, "off") || !strcmp(a, "0")))
		opt.crc_use = 0;
	else
		die(2, "--crc-use on|off");
}

static void opt_var(const char *o, const char *a)
{
	const char *eq = a ? strchr(a, '=') : NULL;
	uint64_t v;

	(void)o;
	if (!eq || eval(eq + 1, &v))
		die(2, "--var NAME=EXPR");
	set_var(a, eq - a, v);
}

/*
 * FLAG: no argument, stores val. U64, LONG: a number (expression), also
 * sets *set if given. STR: the argument as it is. FN: fn() does it.
 */
enum okind { FLAG, U64, LONG, STR, FN };

/* the rows; lo: responder (--listen) only */
#define O_FLAG(n, d, v, lo) \
	{ .name = n, .kind = FLAG, .dst = d, .val = v, .listen_only = lo }
#define O_U64(n, d, s, lo) \
	{ .name = n, .kind = U64, .dst = d, .set = s, .listen_only = lo }
#define O_LONG(n, d)	{ .name = n, .kind = LONG, .dst = d }
#define O_STR(n, d, lo)	{ .name = n, .kind = STR, .dst = d, .listen_only = lo }
#define O_FN(n, f)	{ .name = n, .kind = FN, .fn = f }

static const struct optdef {
	const char *name;
	enum okind kind;
	void *dst;
	int val;
	int *set;
	void (*fn)(const char *o, const char *a);
	int listen_only;	/* responder (--listen) only */
} optdefs[] = {
	/* MPA Request (and Reply) */
	O_U64("--rev", &opt.rev, &opt.rev_set, 0),
	O_FLAG("--crc", &opt.crc, 1, 0),
	O_FLAG("--no-crc", &opt.crc, 0, 0),
	O_FLAG("--markers", &opt.markers, 1, 0),
	O_LONG("--flags", &opt.flags_raw),
	O_FLAG("--no-enhanced", &opt.enhanced, 0, 0),
	O_FLAG("--enhanced", &opt.enhanced, 1, 0),
	O_U64("--ird", &opt.ird, &opt.ird_set, 0),
	O_U64("--ord", &opt.ord, &opt.ord_set, 0),
	O_FLAG("--p2p", &opt.p2p, 1, 0),
	O_FLAG("--no-p2p", &opt.p2p, 0, 0),
	O_FN("--rtr", opt_rtr),
	O_LONG("--ird-word", &opt.ird_word),
	O_LONG("--ord-word", &opt.ord_word),
	O_STR("--pdata", &opt.pdata_hex, 0),
	O_LONG("--pd-len", &opt.pd_len),
	O_STR("--req-hex", &opt.req_hex, 0),
	/* session */
	O_STR("--src", &opt.src, 0),
	O_U64("--delay", &opt.delay, &opt.delay_set, 0),
	O_STR("--send-rtr", &opt.send_rtr, 0),
	O_U64("--early", &opt.early, NULL, 0),
	O_U64("--rx-ms", &opt.rx_ms, NULL, 0),
	O_U64("--timeout", &opt.timeout, NULL, 0),
	O_FLAG("--coalesce", &S.coalesce, 1, 0),
	O_FN("--crc-use", opt_crc_use),
	O_FN("--var", opt_var),
	O_STR("--script", &opt.script, 0),
	/* responder */
	O_FLAG("--listen", &opt.listen, 1, 0),
	O_U64("--accept-count", &opt.accept_count, NULL, 1),
	O_STR("--reply-hex", &opt.reply_hex, 1),
	O_STR("--key", &opt.key, 1),
	O_FLAG("--reject", &opt.reject, 1, 1),
	O_FLAG("--close-on-enhanced", &opt.close_on_enh, 1, 1),
	O_FLAG("--no-reply", &opt.no_reply, 1, 1),
	O_STR("--garbage", &opt.garbage_hex, 1),
};

static void opt_defaults(void)
{
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
}

static const struct optdef *optdef(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(optdefs) / sizeof(optdefs[0]); i++)
		if (!strcmp(optdefs[i].name, name))
			return &optdefs[i];
	return NULL;
}

/* Option o with the next argument a (NULL: none); returns whether it took a. */
static int apply_option(const struct optdef *d, const char *o, const char *a)
{
	uint64_t v = 0;

	if (d->kind == U64 || d->kind == LONG) {
		if (!a || eval(a, &v))
			die(2, "%s: bad number", o);
		if (d->set)
			*d->set = 1;
	}
	switch (d->kind) {
	case FLAG: *(int *)d->dst = d->val; break;
	case U64: *(uint64_t *)d->dst = v; break;
	case LONG: *(long *)d->dst = v; break;
	case STR: *(const char **)d->dst = a; break;
	case FN: d->fn(o, a); break;
	}
	if (d->listen_only)
		opt.listen_only = o;
	return d->kind != FLAG;
}

/*
 * The options (--name, up to "--" or the first other argument), applied
 * to opt over its defaults. Returns the index of the first operand, or -1
 * after --help printed the usage.
 */
int parse_options(int argc, char **argv)
{
	int argi;

	opt_defaults();
	for (argi = 1; argi < argc && argv[argi][0] == '-' && argv[argi][1] == '-';
	     argi++) {
		const char *o = argv[argi], *a = argi + 1 < argc ? argv[argi + 1] : NULL;
		const struct optdef *d;

		if (!strcmp(o, "--help")) {
			usage(stdout);
			return -1;
		}
		if (!strcmp(o, "--"))
			return argi + 1;
		d = optdef(o);
		if (!d) {
			usage(stderr);
			die(2, "unknown option %s", o);
		}
		if (apply_option(d, o, a)) {
			if (!a)
				die(2, "%s needs an argument", o);
			argi++;
		}
	}
	return argi;
}
