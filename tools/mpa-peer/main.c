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
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "mpa-peer.h"

/* Initiator: connect, handshake, steps. Returns the exit status. */
static int initiator(const char *addr, const char *port, char **steps,
		     int nsteps)
{
	int rc;

	if (opt.listen_only)
		die(2, "%s: only with --listen", opt.listen_only);
	conn_init(tcp_connect(addr, port, opt.src, opt.timeout));
	out("connected %s:%s\n", addr, port);
	if (opt.early > (uint64_t)nsteps)
		die(2, "--early %llu: only %d steps given",
		    (unsigned long long)opt.early, nsteps);
	rc = mpa_initiate(steps, (int)opt.early);
	if (rc >= 0)
		return rc;
	run_session(steps + opt.early, nsteps - (int)opt.early, client_script);
	close(S.fd);
	return 0;
}

/* Responder, one accepted connection: handshake, steps (or only reads). */
static void serve(int conn, char **steps, int nsteps)
{
	int rc;

	out("conn %d\n", conn);
	rc = mpa_respond();
	if (rc > 0)
		run_session(steps, nsteps, listen_script);
	else if (!rc)
		run_session(NULL, 0, NULL);
}

/*
 * Responder: listen, then --accept-count connections one after the other;
 * the listener is closed once the last one is accepted. Returns the exit
 * status (0: some connection was accepted).
 */
static int responder(const char *addr, const char *port, char **steps,
		     int nsteps)
{
	uint64_t i;
	int lfd, fd, served = 0;

	if (opt.req_hex || opt.src)
		die(2, "%s: not with --listen",
		    opt.req_hex ? "--req-hex" : "--src");
	if (!opt.accept_count)
		die(2, "--accept-count: at least 1");
	if (!opt.delay_set)
		opt.delay = 0;
	mpa_responder_setup();
	if (opt.script)
		load_script();
	lfd = tcp_listen(addr, port);
	for (i = 1; i <= opt.accept_count; i++) {
		fd = tcp_accept(lfd, opt.timeout);
		if (fd < 0) {
			out("accept timeout\n");
			break;
		}
		/*
		 * No listener while the last connection is served: a peer
		 * that connects again (siw's revision 1 retry) is refused
		 * at once, not left to a close that races with it.
		 */
		if (i == opt.accept_count) {
			close(lfd);
			lfd = -1;
		}
		conn_init(fd);
		serve((int)i, steps, nsteps);
		close(S.fd);
		S.fd = -1;
		served++;
	}
	if (lfd >= 0)
		close(lfd);
	return served ? 0 : 1;
}

int main(int argc, char **argv)
{
	int argi;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	crc32c_init();
	S.fd = -1;
	argi = parse_options(argc, argv);
	if (argi < 0)
		return 0;	/* --help */
	if (argc - argi < 2) {
		usage(stderr);
		return 2;
	}
	if (!opt.send_rtr)
		die(2, "--send-rtr needs an argument");
	if (opt.listen)
		return responder(argv[argi], argv[argi + 1], argv + argi + 2,
				 argc - argi - 2);
	return initiator(argv[argi], argv[argi + 1], argv + argi + 2,
			 argc - argi - 2);
}
