# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
siwx_wire.py - the wire constants of include/siwx/wire.h for Python.

The header is the one home of every MPA, DDP and RDMAP constant siwx
speaks; this module parses it when imported, so the Python decoders never
carry copies. Every name is available with and without its SIWX_ prefix:

    import siwx_wire as W
    W.MPA_FLAG_C, W.SIWX_MPA_FLAG_C     # 0x40
    W.OPCODE_NAMES[0xa]                 # "ATOMIC_REQ"

The header's rules (see its comment) are enforced here: a #define this
module cannot evaluate is an error, not a silently missing name. Its unit
test (test_siwx_wire.py) compiles the header with the C compiler and
compares every value.

Environment: SIWX_WIRE_H overrides the header's path (default: the
repository's include/siwx/wire.h, found relative to this file).
"""
import ast
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.environ.get("SIWX_WIRE_H") or os.path.normpath(
    os.path.join(HERE, "..", "..", "include", "siwx", "wire.h"))

_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)(\(?)\s*(.*?)\s*$")
_INT = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b")
_OPS = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Add,
        ast.Sub, ast.Mult, ast.LShift, ast.RShift, ast.BitOr, ast.BitAnd,
        ast.Invert, ast.USub, ast.UAdd)


class WireHeaderError(Exception):
    pass


def _strip_comments(text):
    # keep the newlines of a comment, so line numbers stay right
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"),
                  text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _eval(expr, values, where):
    def name(m):
        n = m.group(0)
        if n not in values:
            raise WireHeaderError("%s: unknown name %s" % (where, n))
        v = values[n]
        if isinstance(v, str):
            raise WireHeaderError("%s: string %s in an expression" %
                                  (where, n))
        return "(%d)" % v
    py = re.sub(r"\b[A-Za-z_]\w*\b", name, _INT.sub(
        lambda m: str(int(m.group(1), 0)), expr))
    try:
        tree = ast.parse(py, mode="eval")
    except SyntaxError as e:
        raise WireHeaderError("%s: cannot parse %r (%s)" % (where, expr, e))
    for node in ast.walk(tree):
        if not isinstance(node, _OPS):
            raise WireHeaderError("%s: %r uses %s, which wire.h's rules "
                                  "do not allow" %
                                  (where, expr, type(node).__name__))
    v = eval(compile(tree, where, "eval"), {"__builtins__": {}})
    if not isinstance(v, int):
        raise WireHeaderError("%s: %r is not an integer" % (where, expr))
    return v


def parse(path=PATH):
    """{NAME: int or str} of every #define in the header (the include
    guard excepted), in the order of the file."""
    with open(path) as f:
        text = _strip_comments(f.read())
    values = {}
    for lineno, line in enumerate(text.split("\n"), 1):
        m = _DEFINE.match(line)
        if not m:
            if re.match(r"^\s*#\s*define\b", line):
                raise WireHeaderError("%s:%d: unreadable #define" %
                                      (path, lineno))
            continue
        name, paren, val = m.groups()
        where = "%s:%d" % (os.path.basename(path), lineno)
        if paren:
            raise WireHeaderError("%s: %s is a function-like macro" %
                                  (where, name))
        if not val:
            if name.startswith("_") and name.endswith("_H"):
                continue        # the include guard
            raise WireHeaderError("%s: %s has no value" % (where, name))
        if name in values:
            raise WireHeaderError("%s: %s defined twice" % (where, name))
        if not name.startswith("SIWX_"):
            raise WireHeaderError("%s: %s lacks the SIWX_ prefix" %
                                  (where, name))
        sm = re.fullmatch(r'"((?:[^"\\]|\\.)*)"', val)
        if sm:
            values[name] = sm.group(1).encode().decode("unicode_escape")
        elif val in values:
            values[name] = values[val]
        else:
            values[name] = _eval(val, values, where)
    return values


VALUES = parse()
globals().update(VALUES)
globals().update({k[len("SIWX_"):]: v for k, v in VALUES.items()})


def _table(prefix, exclude=()):
    return {v: k[len(prefix):] for k, v in VALUES.items()
            if k.startswith(prefix) and k[len(prefix):] not in exclude}


# RDMAP opcode -> name (WRITE, READ_REQ, ..., ATOMIC_RESP)
OPCODE_NAMES = _table("SIWX_RDMAP_OP_", exclude=("COUNT",))
# Terminate layer -> name (RDMAP, DDP, LLP)
TERM_LAYER_NAMES = _table("SIWX_TERM_LAYER_", exclude=("SHIFT",))
# MPA keys as bytes
KEY_REQ = VALUES["SIWX_MPA_KEY_REQ"].encode()
KEY_REP = VALUES["SIWX_MPA_KEY_REP"].encode()


def fpdu_len(ulpdu_len):
    """Bytes one FPDU with a ULPDU of ulpdu_len bytes takes on the wire
    (markers off): length field, ULPDU, pad, CRC."""
    n = MPA_HDR_SIZE + ulpdu_len
    return n + (-n) % MPA_PAD_ALIGN + MPA_CRC_SIZE


def pad_len(ulpdu_len):
    return (-(MPA_HDR_SIZE + ulpdu_len)) % MPA_PAD_ALIGN
