#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""profile-summary.py DIR: summarise tools/bench/profile.sh's DIR/runs.csv and
DIR/perf/*.txt as Markdown on stdout: the side-by-side figures and ratios,
TCP segments per operation, and for every profiled experiment where the
CPU time went (categories, top symbols, inclusive time of siw's entry
points).  Python standard library only."""

import csv
import os
import re
import statistics
import sys

# (experiment, what, its iteration count key) in table order
EXPS = [
    ("read_lat", "8-byte RDMA Read, latency (ib_read_lat, round trip)"),
    ("fadd_lat", "FetchAdd, latency (ib_atomic_lat, round trip)"),
    ("read_bw", "8-byte RDMA Read, rate (ib_read_bw)"),
    ("fadd_bw", "FetchAdd, rate (ib_atomic_bw)"),
    ("wpoll_lat", "8-byte RDMA Write, receiver polls memory (imm_bench, one-way)"),
    ("wimm_lat", "8-byte RDMA Write with Immediate (imm_bench, one-way)"),
    ("wsend_lat", "8-byte RDMA Write + 8-byte Send (imm_bench, one-way)"),
    ("wplain_bw", "64-byte RDMA Write, rate (imm_bench)"),
    ("wimm_bw", "64-byte RDMA Write with Immediate, rate (imm_bench)"),
    ("wsend_bw", "64-byte RDMA Write + Send, rate (imm_bench)"),
    ("write64k_bw", "64 KiB RDMA Write, rate (ib_write_bw)"),
    ("read64k_bw", "64 KiB RDMA Read, rate (ib_read_bw)"),
    ("send64k_bw", "64 KiB Send, rate (ib_send_bw)"),
]
# (ratio name, numerator, denominator, note)
RATIOS = [
    ("FetchAdd / Read latency", "fadd_lat", "read_lat", "> 1: the atomic is slower"),
    ("FetchAdd / Read rate", "fadd_bw", "read_bw", "< 1: the atomic is slower"),
    ("Write+Imm / Write latency", "wimm_lat", "wpoll_lat", "> 1: slower"),
    ("Write+Imm / Write+Send latency", "wimm_lat", "wsend_lat", "> 1: slower"),
    ("Write+Imm / Write rate", "wimm_bw", "wplain_bw", "< 1: slower"),
    ("Write+Imm / Write+Send rate", "wimm_bw", "wsend_bw", "< 1: slower"),
]

SAMPLE_HZ = 1999	# perf record -F

CATEGORIES = [
    ("idle (vCPU halted)", lambda d, s: re.match(r"(default_idle|pv_native_safe_halt|native_safe_halt|"
                                                  r"cpuidle|do_idle|acpi_idle|mwait)", s)),
    ("user: benchmark tool (poll loop, timing)", lambda d, s: re.match(r"(ib_\w+_(lat|bw)|imm_bench)$", d)),
    ("user: libsiw (CQ polling, posting)", lambda d, s: d.startswith("libsiw")),
    ("user: libc (spinlocks), libibverbs", lambda d, s: d.startswith(("libibverbs", "librdmacm",
                                                                     "libc"))),
    ("user: vDSO clock", lambda d, s: d == "[vdso]"),
    ("process start-up (loader, exec, 9p, page faults)", lambda d, s: d.startswith("ld-linux") or re.match(
        r"(p9_|v9fs|do_filp_open|path_|link_path|filemap|next_uptodate|do_fault|handle_mm|"
        r"__handle_mm|clear_page|copy_page|do_anonymous|_dl_|unmap_|zap_|release_pages|"
        r"free_pages|__free_|alloc_pages|get_page_from|rmqueue|__alloc_pages|memcg|"
        r"lru_|folio|__folio|mod_objcg|exc_page_fault|do_user_addr_fault|lock_vma|"
        r"vma_|mmap|__mmap|do_mmap|elf_|load_elf|bprm|exec_|begin_new_exec|"
        r"copy_process|dup_|__do_sys_clone|kernel_clone|page_remove|set_pte|ptep)", s)),
    ("siw module (own code)", lambda d, s: d in ("[siw]", "siw") or s.startswith("siw_")),
    ("data copies", lambda d, s: re.match(r"(rep_movs|copy_|_copy_|__copy_|memcpy|__memcpy|memmove|"
                                          r"skb_copy|csum_partial_copy|memset|__memset)", s)),
    ("CRC", lambda d, s: re.match(r"(crc32c|crc_|__crc|crypto_shash|chksum)", s)),
    ("IRQs on again: samples of IRQ-off code (softirq exit, unlock_irqrestore)", lambda d, s: re.match(
        r"(handle_softirqs|__do_softirq|irq_exit|__irq_exit|_raw_spin_unlock_irq|"
        r"_raw_spin_unlock_bh|do_softirq|asm_sysvec|sysvec_|__sysvec|irqentry_exit|"
        r"__local_bh_enable|local_bh_enable|finish_task_switch)", s)),
    ("system call entry/exit, uverbs", lambda d, s: re.match(
        r"(entry_SYSCALL|do_syscall|syscall_|__x64_sys|__x86_|ib_uverbs|uverbs_|ksys_|vfs_|"
        r"__fdget|fdget|fput|__fput|syscall_exit|exit_to_user|rdma_|ib_|ioctl|"
        r"rw_verify|security_|apparmor|__check_object|check_heap|__virt_addr_valid)", s)),
    ("TCP/IP, veth", lambda d, s: re.match(
        r"(tcp_|__tcp|ip_|__ip|inet_|sk_|__sk|skb_|__skb|kfree_skb|consume_skb|__kfree_skb|"
        r"dev_|__dev|veth_|netif_|__netif|napi_|__napi|net_rx|process_backlog|nf_|ipv4_|dst_|"
        r"sock_|release_sock|lock_sock|__release_sock|__inet|raw_|eth_|neigh_|validate_xmit|"
        r"sch_|qdisc|__qdisc|kmalloc_reserve|__alloc_skb|tso_|bpf_|__build_skb|"
        r"page_pool|packet_|kmem_cache|__kmem_cache|kfree|__kmalloc|kmalloc|__slab|slab_|"
        r"___slab|build_skb|minmax_|bictcp|cubictcp|rb_|__rb_|ktime_get|__usecs_to|"
        r"tcp4_|__xfrm|xfrm|fib_|__fib|rt_|ipv6_|__inet6|mod_timer|__mod_timer|sk_reset|"
        r"ip4_|__cgroup_bpf|cgroup_bpf|__netdev|netdev_|__napi_|gro_|dev_gro)", s)),
    ("scheduler, wakeups, kthreads", lambda d, s: re.match(
        r"(__schedule|schedule|pick_|enqueue|dequeue|try_to_wake|update_|"
        r"__update|set_next|put_prev|ttwu|wake_up|__wake_up|select_task|check_preempt|"
        r"resched|sched_|__sched|psi_|account_|__switch_to|switch_mm|context_switch|"
        r"native_sched|load_balance|rebalance|newidle|kthread|smpboot|cpu_startup|"
        r"hrtimer|__hrtimer|tick_|rcu_|__rcu|raw_spin_rq|_raw_spin_lock|native_queued|"
        r"queued_spin|__raw_spin|clockevents|lapic|native_apic|x2apic|timekeeping|read_tsc|"
        r"run_timer|__run_timer|timerqueue|irqtime|vtime|cpuacct|cgroup_rstat|task_tick|"
        r"__cond_resched|preempt_|migrate|wq_|worker_|process_one_work|queue_work|__queue_work|"
        r"insert_work|complete|__complete|do_nanosleep|futex|__futex)", s)),
]

ROLES = ["client (requester)", "server (responder)", "siw_tx kthreads", "other threads",
         "idle (swapper)"]


def parse_flat(path):
    """[(samples, pid, comm, dso, sym)] from perf report -F overhead,sample,pid,dso,sym."""
    rows = []
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"\s+([\d.]+)%\s+(\d+)\s+(\d+):(\S+)\s+(\S+)\s+\[(.)\]\s+(.*\S)\s*$",
                         line)
            if m:
                rows.append((int(m.group(2)), int(m.group(3)), m.group(4), m.group(5),
                             m.group(7)))
    return rows


def parse_children(path):
    """{sym: (children%, self%)} from perf report --children --sort sym -g none."""
    out = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"\s+([\d.]+)%\s+([\d.]+)%\s+\[(.)\]\s+(.*\S)\s*$", line)
            if m:
                out[m.group(4)] = (float(m.group(1)), float(m.group(2)))
    return out


def category(dso, sym):
    for c, f in CATEGORIES:
        if f(dso, sym):
            return c
    return "other kernel" if dso.startswith("[") else "other user space"


def roles(rows, tool):
    """pid -> role: the benchmark tool's two processes (the client started
    later, so its pid is higher), siw's TX threads, the rest."""
    tool_pids = sorted({pid for _, pid, comm, _, _ in rows if comm == tool})
    r = {}
    for _, pid, comm, _, _ in rows:
        if pid == 0:
            r[pid] = ROLES[4]
        elif tool_pids and pid == tool_pids[-1] and len(tool_pids) > 1:
            r[pid] = ROLES[0]
        elif pid in tool_pids:
            r[pid] = ROLES[1]
        elif comm.startswith("siw_tx"):
            r[pid] = ROLES[2]
        else:
            r[pid] = ROLES[3]
    return r


def profile_section(pdir, e, what, ops):
    fp = os.path.join(pdir, e + ".flat.txt")
    if not os.path.exists(fp):
        return
    rows = parse_flat(fp)
    if not rows:
        return
    tool = {"read_lat": "ib_read_lat", "fadd_lat": "ib_atomic_lat", "read_bw": "ib_read_bw",
            "fadd_bw": "ib_atomic_bw", "write64k_bw": "ib_write_bw", "read64k_bw": "ib_read_bw",
            "send64k_bw": "ib_send_bw"}.get(e, "imm_bench")
    role = roles(rows, tool)
    total = sum(r[0] for r in rows)
    # µs of CPU time per operation for a number of samples
    us = (lambda n: n * 1e6 / SAMPLE_HZ / ops) if ops else (lambda n: 0.0)
    cat_role = {}
    for n, pid, comm, dso, sym in rows:
        k = (category(dso, sym), role[pid])
        cat_role[k] = cat_role.get(k, 0) + n
    cats = {}
    for (c, _), n in cat_role.items():
        cats[c] = cats.get(c, 0) + n
    print("### %s (`%s`)\n" % (what, e))
    print("%d samples at %d Hz on 2 vCPUs for %d operations: CPU µs per operation "
          "(both ends; idle = halted vCPU time)\n" % (total, SAMPLE_HZ, ops))
    print("| category | total | %s |" % " | ".join(ROLES))
    print("|---|---|" + "---|" * len(ROLES))
    for c, n in sorted(cats.items(), key=lambda x: -x[1]):
        if n * 1000 < total:
            continue
        print("| %s | %.1f (%.0f%%) | %s |" % (c, us(n), 100.0 * n / total, " | ".join(
            "%.1f" % us(cat_role.get((c, r), 0)) for r in ROLES)))
    rt = {r: sum(n for (c, rr), n in cat_role.items() if rr == r) for r in ROLES}
    print("| **all** | %.1f | %s |" % (us(total), " | ".join("%.1f" % us(rt[r]) for r in ROLES)))
    print("\nTop symbols (self, all processes):\n")
    agg = {}
    for n, pid, comm, dso, sym in rows:
        agg[(dso, sym)] = agg.get((dso, sym), 0) + n
    print("| % | µs/op | dso | symbol |\n|---|---|---|---|")
    for (dso, sym), n in sorted(agg.items(), key=lambda x: -x[1])[:15]:
        print("| %.1f | %.2f | %s | %s |" % (100.0 * n / total, us(n), dso, sym))
    cp = os.path.join(pdir, e + ".children.txt")
    if os.path.exists(cp):
        ch = parse_children(cp)
        siw = sorted(((v[0], v[1], s) for s, v in ch.items()
                      if s.startswith("siw_") and not s.startswith("siw_poll_cq")), reverse=True)
        if siw:
            print("\nsiw kernel functions, inclusive (children) µs/op and self %:\n")
            print("| function | incl. µs/op | incl. % | self % |\n|---|---|---|---|")
            for c, sf, s in siw[:12]:
                print("| %s | %.2f | %.2f | %.2f |" % (s, us(c * total / 100), c, sf))
        keys = ["do_syscall_64", "ib_uverbs_write", "siw_post_send", "tcp_sendmsg",
                "tcp_v4_rcv", "net_rx_action", "siw_tcp_rx_data", "__schedule"]
        got = [(k, ch[k]) for k in keys if k in ch]
        if got:
            print("\nOther entry points, inclusive µs/op: " + ", ".join(
                "%s %.1f" % (k, us(v[0] * total / 100)) for k, v in got))
    print()


# A latency run whose median is above this sat in the 4 ms scheduler-tick mode
# of a busy TCG host (see "How to read the numbers"): reported, not used for
# the "unstalled" figures and the paired ratios.
STALL_US = 1000.0


def main():
    d = sys.argv[1]
    runs = {}	# exp -> {rep: value}
    mins = {}	# exp -> [min latency]
    segs = {}
    with open(os.path.join(d, "runs.csv")) as f:
        for row in csv.DictReader(f):
            if row["phase"] != "measure":
                continue
            try:
                v = float(row["value"])
            except ValueError:
                continue
            runs.setdefault(row["exp"], {})[row["rep"]] = v
            if row.get("min"):
                mins.setdefault(row["exp"], []).append(float(row["min"]))
            ops = int(row.get("ops") or 0) or 1
            segs.setdefault(row["exp"], []).append((int(row["client_segs"]) / ops,
                                                   int(row["server_segs"]) / ops))
    guest = ""
    for n in ("guest.txt", "machine.txt"):
        if os.path.exists(os.path.join(d, n)):
            with open(os.path.join(d, n)) as f:
                guest += f.read()

    def ok(e, rep):
        v = runs.get(e, {}).get(rep)
        return v is not None and not (e.endswith("_lat") and v > STALL_US)

    print("## Side by side (no profiler)\n")
    print("```\n%s```\n" % guest)
    print("Latency: µs (median of the run; best = minimum of all iterations of all runs); "
          "rate: messages/s. *unstalled*: the runs whose median stayed below %d µs.\n"
          % STALL_US)
    print("| experiment | runs | median of all runs (min–max) | unstalled: runs, median | best "
          "| TCP segments sent per operation, client / server |")
    print("|---|---|---|---|---|---|")
    med = {}
    for e, what in EXPS:
        v = sorted(runs.get(e, {}).values())
        if not v:
            continue
        u = [x for r, x in runs[e].items() if ok(e, r)]
        med[e] = statistics.median(u) if u else None
        cs = statistics.median(c for c, _ in segs[e])
        ss = statistics.median(s for _, s in segs[e])
        print("| %s | %d | %.1f (%.1f–%.1f) | %d, %s | %s | %.2f / %.2f |" % (
            what, len(v), statistics.median(v), v[0], v[-1], len(u),
            "%.1f" % med[e] if u else "-", "%.1f" % min(mins[e]) if e in mins else "-", cs, ss))
    print()
    print("| ratio | paired per repetition: median (min–max, n) | unstalled medians | best case | "
          "meaning |\n|---|---|---|---|---|")
    for name, a, b, note in RATIOS:
        if a not in runs or b not in runs:
            continue
        pr = sorted(runs[a][r] / runs[b][r] for r in runs[a]
                    if r in runs[b] and ok(a, r) and ok(b, r) and runs[b][r])
        pcell = ("%.3f (%.2f–%.2f, %d)" % (statistics.median(pr), pr[0], pr[-1], len(pr))
                 if pr else "-")
        mcell = "%.3f" % (med[a] / med[b]) if med.get(a) and med.get(b) else "-"
        bcell = ("%.3f" % (min(mins[a]) / min(mins[b])) if a in mins and b in mins else "-")
        print("| %s | %s | %s | %s | %s |" % (name, pcell, mcell, bcell, note))
    print()
    pdir = os.path.join(d, "perf")
    if not os.path.isdir(pdir):
        return 0
    print("## Profiles (perf record -a -g -e cpu-clock, both ends and the kernel, one run each)\n")
    pops = {}
    with open(os.path.join(d, "runs.csv")) as f:
        for row in csv.DictReader(f):
            if row["phase"] == "profile":
                pops[row["exp"]] = int(row.get("ops") or 0)
    for e, what in EXPS:
        profile_section(pdir, e, what, pops.get(e, 0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
