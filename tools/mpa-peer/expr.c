// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mpa-peer: variables, the number expressions of steps and options, and
 * hex strings.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpa-peer.h"

static struct {
	char name[32];
	uint64_t val;
} vars[MAX_VARS];
static int nvars;

/* define or redefine (a name is cut to 31 characters; a full table drops) */
void set_var(const char *name, size_t nlen, uint64_t val)
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

int get_var(const char *name, size_t nlen, uint64_t *val)
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

void unset_var(const char *name)
{
	int i;

	for (i = 0; i < nvars; i++)
		if (!strcmp(vars[i].name, name)) {
			vars[i] = vars[--nvars];
			return;
		}
}

/*
 * One operand at *sp: ${name} or $name (a variable), or an integer in C
 * notation (0x.., 0.., decimal), optionally preceded by ~. Advances *sp.
 */
static int operand(const char **sp, uint64_t *v)
{
	const char *s = *sp;
	int inv = 0;

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
		if (get_var(n, e - n, v)) {
			fprintf(stderr, "mpa-peer: undefined variable %.*s\n",
				(int)(e - n), n);
			return -1;
		}
	} else {
		char *end;

		if (!isdigit((unsigned char)*s))
			return -1;
		errno = 0;
		*v = strtoull(s, &end, 0);
		if (errno || end == s)
			return -1;
		s = end;
	}
	if (inv)
		*v = ~*v;
	*sp = s;
	return 0;
}

/*
 * A number: operands joined by + - * ^ | & (evaluated left to right, no
 * precedence).
 */
int eval(const char *s, uint64_t *out)
{
	uint64_t acc = 0, v;
	char op = '+';

	if (!*s)
		return -1;
	for (;;) {
		if (operand(&s, &v))
			return -1;
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
int parse_hex(const char *s, uint8_t *buf, size_t max, size_t *n)
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
