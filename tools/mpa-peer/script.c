// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mpa-peer: the script language. A step is one command line argument or
 * one line of --script: CMD key=value... Keys are looked up by sget()/
 * nget(), and a key no one looked up is an error (step_done()). The FPDU
 * and frame steps are in fpdu_tx.c; the control steps (rx, sleep, flush,
 * shutdown, msn, set, echo) here, and run_session(), which runs all steps
 * of a connection and the final read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mpa-peer.h"

/* ---------------------------------------------------------------- steps */

void step_parse(struct step *st, char *line, const char *text, int lineno)
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

/* the value of key (the last one given), or NULL */
const char *sget(struct step *st, const char *key)
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
int nget(struct step *st, const char *key, uint64_t dflt, uint64_t *v)
{
	const char *s = sget(st, key);

	*v = dflt;
	if (!s)
		return 0;
	if (eval(s, v))
		die(2, "step '%s': bad number %s=%s", st->text, key, s);
	return 1;
}

void step_done(struct step *st)
{
	int i;

	for (i = 0; i < st->ntok; i++)
		if (!st->used[i])
			die(2, "step '%s': unknown argument '%s' for '%s'",
			    st->text, st->key[i], st->cmd);
}

/* ------------------------------------------------------------ control steps */

/* sleep [ms=100] */
static void step_sleep(struct step *st)
{
	uint64_t v;

	nget(st, "ms", 100, &v);
	step_done(st);
	tx_flush();
	usleep(v * 1000);
}

/* rx [ms=1000] [until=OPCODE|any] */
static void step_rx(struct step *st)
{
	uint64_t until = (uint64_t)RX_UNTIL_NONE, v;
	const char *u;

	nget(st, "ms", 1000, &v);
	u = sget(st, "until");
	if (u) {
		if (!strcmp(u, "any"))
			until = RX_UNTIL_ANY;
		else if (eval(u, &until) || until > SIWX_RDMAP_MASK_OPCODE)
			die(2, "step '%s': bad until=", st->text);
	}
	step_done(st);
	rx_for(v, (int)until);
}

static void step_flush(struct step *st)
{
	step_done(st);
	tx_flush();
}

static void step_shutdown(struct step *st)
{
	step_done(st);
	tx_flush();
	shutdown(S.fd, SHUT_WR);
	out("shutdown\n");
}

/* msn qn=N value=M: set the next MSN of a queue */
static void step_msn(struct step *st)
{
	uint64_t q, v;

	nget(st, "qn", SIWX_DDP_QN_SEND, &q);
	nget(st, "value", SIWX_DDP_MSN_FIRST, &v);
	step_done(st);
	if (q < SIWX_DDP_QN_COUNT)
		S.msn[q] = v;
}

/* set name=expr ... */
static void step_set(struct step *st)
{
	uint64_t v;
	int i;

	for (i = 0; i < st->ntok; i++) {
		if (eval(st->val[i], &v))
			die(2, "step '%s': bad value", st->text);
		set_var(st->key[i], strlen(st->key[i]), v);
		st->used[i] = 1;
	}
}

/* echo k=v...: print the line */
static void step_echo(struct step *st)
{
	int i;

	out("echo");
	for (i = 0; i < st->ntok; i++) {
		st->used[i] = 1;
		out(" %s=%s", st->key[i], st->val[i]);
	}
	out("\n");
}

static const struct {
	const char *cmd;
	void (*run)(struct step *st);
} control_steps[] = {
	{ "sleep", step_sleep },
	{ "rx", step_rx },
	{ "flush", step_flush },
	{ "shutdown", step_shutdown },
	{ "msn", step_msn },
	{ "set", step_set },
	{ "echo", step_echo },
};

/* One step (line is taken apart); lineno 0: from the command line. */
static void run_step(char *line, int lineno)
{
	char *text = strdup(line), *nl;
	struct step st;
	unsigned int i;

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
	if (!run_fpdu_step(&st) && !run_frame_step(&st)) {
		for (i = 0; i < sizeof(control_steps) / sizeof(control_steps[0]);
		     i++)
			if (!strcmp(st.cmd, control_steps[i].cmd))
				break;
		if (i == sizeof(control_steps) / sizeof(control_steps[0]))
			die(2, "line %d: unknown step '%s'", lineno, st.cmd);
		control_steps[i].run(&st);
	}
	free(text);
}

/* steps given as arguments, until the connection closes */
void run_steps(char **steps, int nsteps)
{
	int i;

	for (i = 0; i < nsteps && !S.closed; i++) {
		char *l = strdup(steps[i]);

		if (!l)
			die(1, "out of memory");
		run_step(l, 0);
		free(l);
	}
}

/* ---------------------------------------------------------------- session */

/* The steps (command line, then --script), then read for --rx-ms. */
void run_session(char **steps, int nsteps, FILE *(*script)(void))
{
	char hex[2 * 64 + 8];

	run_steps(steps, nsteps);
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
	rx_for(opt.rx_ms, RX_UNTIL_NONE);
	if (S.rxlen) {
		hexstr(hex, sizeof(hex), S.rx, S.rxlen > 64 ? 64 : S.rxlen);
		out("rx-partial bytes=%zu head=%s\n", S.rxlen, hex);
	}
	out(S.closed ? "closed\n" : "open\n");
}

/* ----------------------------------------------------------- script sources */

static FILE *open_script(void)
{
	FILE *f = strcmp(opt.script, "-") ? fopen(opt.script, "r") : stdin;

	if (!f)
		die(2, "%s: %s", opt.script, strerror(errno));
	return f;
}

/* client: the script is read as the steps run ('-': stdin) */
FILE *client_script(void)
{
	return open_script();
}

/* responder: the script is read once (load_script()), run per connection */
static char *script_buf;
static size_t script_len;

FILE *listen_script(void)
{
	FILE *f;

	if (!script_len)
		return NULL;
	f = fmemopen(script_buf, script_len, "r");
	if (!f)
		die(1, "fmemopen: %s", strerror(errno));
	return f;
}

void load_script(void)
{
	FILE *f = open_script();
	size_t cap = 0, n;

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
