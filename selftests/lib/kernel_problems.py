# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The kernel log lines that fail a test, for Python suites.

The one definition is tools/vm/kernel-problems.sh (a bash array of
single-quoted extended regexps, joined with '|'); this module reads that
array so that a Python suite checks dmesg with exactly the patterns the VM
harness uses. PROBLEMS is the compiled regexp; PATTERNS the list.
"""

import os
import re

_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                     "tools", "vm", "kernel-problems.sh")


def _patterns(path=_FILE):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^KERNEL_PROBLEM_PATTERNS=\((.*?)^\)", text, re.M | re.S)
    if not m:
        raise ImportError(f"{path}: no KERNEL_PROBLEM_PATTERNS array")
    out = []
    for line in m.group(1).splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        q = re.match(r"'([^']*)'\s*(#.*)?$", line)
        if not q:
            raise ImportError(f"{path}: cannot read pattern line {line!r}")
        out.append(q.group(1))
    if not out:
        raise ImportError(f"{path}: empty KERNEL_PROBLEM_PATTERNS")
    return out


PATTERNS = _patterns()
# ERE and Python re agree on what the patterns use ('?', literals)
PROBLEMS = re.compile("|".join(PATTERNS))
