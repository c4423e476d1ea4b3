"""Hostile guard programs: each must fail in the expected way and leave the host untouched.

Every attack runs between two identical benign runs (same results before and after), with
a fake secret in the host environment and the test's cwd set to a canary directory that a
sloppy trusted function would write into.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from guardagent.profiles import load_profile
from guardagent.sandbox.process import ExecutionResult, SandboxLimits, run_program
from guardagent.sandbox.zygote import toolbox_refs
from guardagent.tools.registry import Toolbox

SECRET_NAME = "GUARD_FAKE_SECRET"
SECRET = "s3cr3t-canary-7f1e9a"
LIMITS = SandboxLimits(wall_seconds=1.5, cpu_seconds=1, memory_mb=256)

HOST_DATA: dict[str, Any] = {"k": ["a", "b"], "config": {"admin": False, "threshold": 3}}

COMPILE = ("CompileError",)
POLICY = ("PolicyError",)
RUNTIME = ("RuntimeError",)
KILLED = ("LimitExceeded", "Timeout")
LIMIT = ("LimitExceeded",)
VERDICT = ("VerdictError",)
NOVERDICT = ("NoVerdict",)
CRASHED = ("SandboxError",)


def make_toolbox() -> Toolbox:
    tb = Toolbox()

    @tb.register
    def lookup(key: str) -> list[str]:
        """Host data by key (returns the host's own list: the sandbox must copy it)."""
        return HOST_DATA[key]

    @tb.register
    def config() -> dict[str, Any]:
        """The host's config dict."""
        return HOST_DATA["config"]

    @tb.register
    def read_setting(name: str) -> str:
        """A sloppy trusted function that reads the environment."""
        return os.environ.get(name, "")

    @tb.register
    def save_note(text: str) -> str:
        """A sloppy trusted function that writes a file relative to the cwd."""
        with open("note.txt", "w") as f:
            f.write(text)
        return "saved"

    @tb.register
    def echo(value: Any) -> Any:
        """Return the value (forces a copy of whatever the program passes)."""
        return value

    return tb


TOOLBOX = make_toolbox()

BENIGN = """
items = lookup("k")
cfg = config()
print("items", items, "threshold", cfg["threshold"])
if cfg["admin"] or len(items) != 2:
    allow("host state was changed")
else:
    deny(["host state intact"], "benign check")
"""

NESTED_PARENS = "x = " + "(" * 5000 + "1" + ")" * 5000
MINUS_BOMB = "x = " + "-" * 90000 + "1\nallow()"
ATTR_BOMB = "x = agent_input" + ".strip()" * 11000 + "\nallow()"
INDENT_BOMB = "".join(" " * i + "if 1:\n" for i in range(120)) + " " * 120 + "allow()\n"
HUGE_SOURCE = "# " + "x" * 200_000 + "\nallow()"

ATTACKS: dict[str, tuple[str, tuple[str, ...]]] = {
    # --- imports and __import__
    "import_os": ("import os\nos.system('touch pwned')\nallow()", POLICY),
    "from_import": ("from os import system\nsystem('id')\nallow()", POLICY),
    "import_as_allow": ("import os as allow\nallow()", POLICY),
    "dunder_import": ("os = __import__('os')\nallow()", COMPILE),
    "builtins_import": ("__builtins__['__import__']('os')\nallow()", COMPILE),
    "getattr_builtins": ("getattr(__builtins__, 'open')\nallow()", COMPILE),
    # --- eval / exec / compile
    "eval_call": ("eval('allow()')", COMPILE),
    "exec_call": ("exec('allow()')", COMPILE),
    "compile_call": ("c = compile('allow()', 'x', 'exec')\nallow()", RUNTIME),
    "eval_alias": ("e = eval\ne('1')\nallow()", RUNTIME),
    "open_file": ("open(CANARY + '/pwned.txt', 'w').write('x')\nallow()", RUNTIME),
    "breakpoint": ("breakpoint()\nallow()", COMPILE),
    "vars_call": ("v = vars()\nallow()", RUNTIME),
    "dir_call": ("d = dir()\nallow()", RUNTIME),
    "globals_call": ("g = globals()\ng['allow'] = None\nallow()", RUNTIME),
    "type_call": ("t = type(agent_input)\nallow()", RUNTIME),
    "object_name": ("o = object\nallow()", RUNTIME),
    # --- dunder attribute chains / __subclasses__ walks
    "subclasses_walk": ("s = ().__class__.__bases__[0].__subclasses__()\nallow()", COMPILE),
    "class_attr": ("c = agent_input.__class__\nallow()", COMPILE),
    "globals_of_tool": ("g = lookup.__globals__['os']\nallow()", COMPILE),
    "lambda_globals": ("g = (lambda: 0).__globals__\nallow()", COMPILE),
    "built_dunder": (
        "c = getattr(getattr((), '__cla' + 'ss__'), '__ba' + 'se__')\nallow()",
        RUNTIME,
    ),
    "getattr_self": ("s = getattr(allow, '__self__')\ns.verdict = 1\nallow()", RUNTIME),
    "getattr_globals": ("g = getattr(lookup, '_' * 2 + 'globals' + '_' * 2)\nallow()", RUNTIME),
    "mro_walk": ("o = int.mro()[-1]\nallow()", RUNTIME),
    "py2_attrs": ("g = getattr(lookup, 'func_globals')\nallow()", RUNTIME),
    "map_getattr": ("x = list(map(getattr, [1], ['__class__']))\nallow()", RUNTIME),
    "sorted_key_getattr": (
        "x = sorted(['__class__'], key=lambda n: getattr(agent_input, n))\nallow()",
        RUNTIME,
    ),
    "self_recorder": ("allow.__self__.verdict = {'allowed': True}", COMPILE),
    "hasattr_probe": ("print(hasattr(agent_input, '__class__'))", NOVERDICT),
    # --- str.format / format_map / f-strings
    "str_format": ("s = '{0.__class__}'.format(agent_input)\nallow()", RUNTIME),
    "format_map": ("s = '{a.__class__}'.format_map({'a': 1})\nallow()", RUNTIME),
    "str_format_unbound": ("s = str.format('{0.__class__}', 1)\nallow()", RUNTIME),
    "getattr_format": ("f = getattr('', 'for' + 'mat')\nallow()", RUNTIME),
    "format_builtin": ("s = format(agent_input, '')\nallow()", RUNTIME),
    "fstring_dunder": ("s = f'{agent_input.__class__}'\nallow()", COMPILE),
    "fstring_nested_dunder": ("s = f'{agent_input:{agent_input.__doc__}}'\nallow()", COMPILE),
    # --- generator / traceback frame walking
    "gi_frame": ("g = (i for i in [1])\nf = g.gi_frame.f_back\nallow()", COMPILE),
    "gi_frame_getattr": ("g = (i for i in [1])\nf = getattr(g, 'gi_' + 'frame')\nallow()", RUNTIME),
    "gi_code_getattr": (
        "def gen():\n    yield 1\nc = getattr(gen(), 'gi_code')\nallow()",
        RUNTIME,
    ),
    "traceback_attr": (
        "try:\n    1 / 0\nexcept Exception as e:\n    tb = e.__traceback__\nallow()",
        COMPILE,
    ),
    "traceback_getattr": (
        "try:\n    1 / 0\nexcept Exception as e:\n    tb = getattr(e, '__traceback__')\nallow()",
        RUNTIME,
    ),
    "tb_frame": (
        "try:\n    1 / 0\nexcept Exception as e:\n    f = getattr(e, 'tb_frame')\nallow()",
        RUNTIME,
    ),
    # --- try/except*, async, match, nonlocal: not in the language subset
    "except_star": ("try:\n    allow()\nexcept* Exception:\n    pass", COMPILE),
    "async_def": ("async def f():\n    allow()\nallow()", COMPILE),
    "match_capture": ("match 1:\n    case allow:\n        pass\nallow()", COMPILE),
    "nonlocal": (
        "def f():\n    x = 1\n    def g():\n        nonlocal x\n    g()\nallow()",
        COMPILE,
    ),
    # --- shadowing guard names
    "shadow_getattr": ("_getattr_ = lambda o, n: 1\nallow()", COMPILE),
    "def_getitem": ("def _getitem_(o, k):\n    return o\nallow()", COMPILE),
    "shadow_print": ("_print_ = None\nallow()", COMPILE),
    "global_write_guard": ("global _write_\n_write_ = None\nallow()", COMPILE),
    "for_getiter": ("for _getiter_ in [1]:\n    pass\nallow()", COMPILE),
    "shadow_builtins": ("__builtins__ = {}\nallow()", COMPILE),
    "metaclass_name": ("__metaclass__ = None\nallow()", COMPILE),
    # --- classes
    "class_def": ("class X:\n    pass\nallow()", POLICY),
    "str_subclass": (
        "class S(str):\n    def __eq__(self, o):\n        return True\ndeny([S('x')])",
        POLICY,
    ),
    # --- rebinding / deleting protected names (verdict integrity)
    "assign_allow": ("allow = deny\nallow()", POLICY),
    "def_deny": ("def deny(*a):\n    pass\ndeny(['x'])\nallow()", POLICY),
    "del_deny": ("del deny\nallow()", POLICY),
    "for_target": ("for allow in [print]:\n    pass\nallow()", POLICY),
    "with_as": ("with agent_input as lookup:\n    pass\nallow()", POLICY),
    "except_as": ("try:\n    1 / 0\nexcept Exception as deny:\n    pass\nallow()", POLICY),
    "walrus": ("if (config := {'admin': True}):\n    pass\nallow()", POLICY),
    "global_input": ("def f():\n    global agent_output\n    agent_output = 'ok'\nf()", POLICY),
    "augassign_input": ("agent_input += ' ALLOW'\nallow()", POLICY),
    "param_name": ("def f(allow):\n    return allow\nf(1)\nallow()", POLICY),
    "lambda_param": ("f = lambda deny: deny\nallow()", POLICY),
    "comprehension_target": ("x = [allow for allow in [1]]\nallow()", POLICY),
    "tuple_unpack_target": ("a, deny = 1, 2\nallow()", POLICY),
    # --- writing attributes of toolbox functions
    "tool_attr_direct": ("lookup.cache = {}\nallow()", POLICY),
    "tool_attr_alias": ("f = lookup\nf.cache = {}\nallow()", RUNTIME),
    "verdict_attr_alias": ("f = allow\nf.reason = 'x'\nallow()", RUNTIME),
    "setattr_builtin": ("setattr(lookup, 'x', 1)\nallow()", RUNTIME),
    "code_swap": ("allow.__code__ = deny.__code__\nallow()", COMPILE),
    # --- mutating data shared with the host
    "mutate_returned_list": (
        "d = lookup('k')\nd.append('pwned')\nif 'pwned' in lookup('k'):\n    allow()",
        NOVERDICT,
    ),
    "mutate_config": (
        "c = config()\nc['admin'] = True\nif config()['admin']:\n    allow()",
        NOVERDICT,
    ),
    "mutate_after_pass": (
        "x = {'a': []}\ny = echo(x)\ny['a'].append(1)\nif x['a']:\n    allow()",
        NOVERDICT,
    ),
    # --- environment secrets and files through trusted functions
    "env_secret": ("s = read_setting('GUARD_FAKE_SECRET')\nprint(s)", NOVERDICT),
    "env_secret_error": ("deny([read_setting('GUARD_FAKE_SECRET') + 1])", RUNTIME),
    "file_via_tool": ("save_note('pwned')\nallow()", RUNTIME),
    "tool_error_args": (
        "try:\n    lookup(agent_input)\nexcept Exception as e:\n    print(e.args)",
        NOVERDICT,
    ),
    # --- infinite and C-level long loops
    "infinite_loop": ("while True:\n    pass", KILLED),
    "catch_everything_loop": (
        "while True:\n    try:\n        while True:\n            pass\n    except:\n        pass",
        KILLED,
    ),
    "c_level_sum": ("sum(range(10 ** 11))\nallow()", KILLED),
    "c_level_pow": ("x = 10 ** 10 ** 8\nallow()", KILLED),
    "iter_sentinel": ("for x in iter(int, 1):\n    pass\nallow()", KILLED),
    # --- memory bombs
    "str_bomb": ("x = 'x' * 10 ** 10\nallow()", LIMIT),
    "list_bomb": ("x = [0] * 10 ** 10\nallow()", LIMIT),
    "list_growth": ("x = []\nwhile True:\n    x.append('a' * 10 ** 6)", KILLED),
    "memory_catch_loop": (
        "x = []\nwhile True:\n    try:\n        x.append(' ' * 10 ** 7)\n    except:\n        pass",
        KILLED,
    ),
    # --- deep recursion
    "recursion": ("def f(n):\n    return f(n + 1)\nf(0)\nallow()", LIMIT),
    "nested_repr": ("x = []\nfor i in range(100000):\n    x = [x]\nprint(x)\nallow()", LIMIT),
    "nested_copy": ("x = []\nfor i in range(100000):\n    x = [x]\necho(x)\nallow()", LIMIT),
    "c_stack_overflow": (
        "x = [1]\nfor i in range(1000000):\n    x = map(abs, x)\nlist(x)\nallow()",
        CRASHED,
    ),
    # --- parser bombs
    "nested_parens": (NESTED_PARENS, COMPILE),
    "unary_bomb": (MINUS_BOMB, COMPILE),
    "attribute_chain_bomb": (ATTR_BOMB, COMPILE),
    "indent_bomb": (INDENT_BOMB, COMPILE),
    "huge_source": (HUGE_SOURCE, COMPILE),
    # ~2.5 s of RestrictedPython transforming: compiled in the child, under the CPU limit
    "transformer_bomb": ("a.b.c.d.e.f.g.h.i.j.k.l.m\n" * 3800 + "allow()", KILLED),
    "null_byte": ("allow()\x00", COMPILE),
    # --- huge output
    "print_flood": ("while True:\n    print('A' * 10000)", KILLED),
    "print_file_kwarg": ("print('x', file=agent_input)\nallow()", RUNTIME),
    "print_file_apply": ("print(*['x'], **{'file': agent_input})\nallow()", RUNTIME),
    # --- forging the verdict
    "allow_twice": ("allow()\nallow()", VERDICT),
    "deny_then_allow": ("deny(['r'])\nallow()", VERDICT),
    "allow_then_deny": ("allow()\ndeny(['r'])", VERDICT),
    "allow_alias_twice": ("v = allow\nv()\nv('again')", VERDICT),
    "bool_reason": ("allow(True)", VERDICT),
    "list_reason": ("allow(['ok'])", VERDICT),
    "violations_str": ("deny('everything')", VERDICT),
    "violations_ints": ("deny([1])", VERDICT),
    "violations_tuple_cols": ("deny({'t': ('a',)})", VERDICT),
    "violations_int_key": ("deny({1: ['a']})", VERDICT),
    "extra_kwarg": ("allow(reason='x', allowed=True)", VERDICT),
    "caught_bad_then_allow": ("try:\n    allow(1)\nexcept Exception:\n    pass\nallow()", VERDICT),
    "deny_then_caught_allow": (
        "deny(['r'])\ntry:\n    allow()\nexcept Exception:\n    pass",
        VERDICT,
    ),
    "print_allow": ("print('ALLOW')", NOVERDICT),
    "print_json_verdict": (
        'print(\'{"v": {"allowed": true, "violations": [], "reason": ""}, "e": null}\')',
        NOVERDICT,
    ),
    "allow_then_crash": ("allow()\nraise ValueError('after')", RUNTIME),
    "printed_forge": ("print('ALLOW')\nx = printed", NOVERDICT),
    "huge_reason": ("deny(['x' * 10 ** 8])", KILLED),
    "huge_error_message": ("raise ValueError('x' * 10 ** 7)", RUNTIME),
    "raise_keyboard_interrupt": ("raise KeyboardInterrupt\nallow()", RUNTIME),
    "exception_group": ("raise ExceptionGroup('x', [ValueError()])\nallow()", RUNTIME),
}


def strip(result: ExecutionResult) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "duration_ms"}


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "keep.txt").write_text("original")
    monkeypatch.setenv(SECRET_NAME, SECRET)
    monkeypatch.chdir(canary)
    return canary


def test_corpus_is_large_enough() -> None:
    assert len(ATTACKS) >= 60


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack(name: str, host: Path) -> None:
    source, kinds = ATTACKS[name]
    source = source.replace("CANARY", json.dumps(str(host)))
    before = strip(run_program(BENIGN, TOOLBOX, "in", "out", LIMITS))
    assert before["ok"] and before["verdict"]["violations"] == ["host state intact"], before

    result = run_program(source, TOOLBOX, "in", "out", LIMITS)

    assert result["ok"] is False, result
    assert result["verdict"] is None, result
    error = result["error"]
    assert error is not None and error.split(":", 1)[0] in kinds, (name, error)
    text = json.dumps(result)
    assert SECRET not in text
    assert len(result["stdout"]) <= LIMITS.max_output_chars + 100
    assert len(error) <= 5000
    assert sorted(p.name for p in host.iterdir()) == ["keep.txt"]
    assert (host / "keep.txt").read_text() == "original"
    assert strip(run_program(BENIGN, TOOLBOX, "in", "out", LIMITS)) == before
    assert HOST_DATA == {"k": ["a", "b"], "config": {"admin": False, "threshold": 3}}


def test_secret_is_visible_to_host_but_not_child(host: Path) -> None:
    """Guards the env test above against passing vacuously."""
    assert os.environ[SECRET_NAME] == SECRET
    result = run_program("deny([read_setting('GUARD_FAKE_SECRET') or 'empty'])", TOOLBOX, "", "")
    assert result["ok"] and result["verdict"]["violations"] == ["empty"]


# The same corpus through the pre-warmed zygote, which serves built-in toolboxes. Programs
# that call the closures above fail there with a NameError (RuntimeError) instead; every
# other expectation holds: no allow, no secret, no file, and the next run is unchanged.
BUILTIN_TOOLBOX = load_profile("mind2web-sc").tools()
BUILTIN_BENIGN = """
user = parse_user_info(agent_input)
deny(["age " + str(user["age"])], "benign check")
"""
BUILTIN_INPUT = "Task: x\nUser information:\n   age: 30,\n   membership: False"


def test_builtin_toolbox_runs_in_the_zygote() -> None:
    assert toolbox_refs(BUILTIN_TOOLBOX) is not None
    assert toolbox_refs(TOOLBOX) is None  # closures keep forking from the caller


# Attacks on the closure toolbox's own names (rebinding `config`, ...) are about that toolbox;
# the name policy itself runs in the caller for both paths and is covered above.
ZYGOTE_ATTACKS = {
    name: attack
    for name, attack in ATTACKS.items()
    if not re.search(r"\b(lookup|config|read_setting|save_note|echo)\b", attack[0])
}


def test_zygote_corpus_is_large_enough() -> None:
    assert len(ZYGOTE_ATTACKS) >= 60


# `trusted`: the warm worker that serves many runs (shipped and verified programs), where the
# benign runs before and after the attack share its process; else one zygote child per run.
@pytest.mark.parametrize("trusted", [False, True], ids=["fork", "warm"])
@pytest.mark.parametrize("name", sorted(ZYGOTE_ATTACKS))
def test_attack_through_zygote(name: str, trusted: bool, host: Path) -> None:
    source, kinds = ZYGOTE_ATTACKS[name]
    source = source.replace("CANARY", json.dumps(str(host)))

    def run(program: str) -> ExecutionResult:
        return run_program(program, BUILTIN_TOOLBOX, BUILTIN_INPUT, "out", LIMITS, trusted=trusted)

    before = strip(run(BUILTIN_BENIGN))
    assert before["ok"] and before["verdict"]["violations"] == ["age 30"], before

    result = run(source)

    assert result["ok"] is False and result["verdict"] is None, result
    error = result["error"] or ""
    assert error.split(":", 1)[0] in (*kinds, *RUNTIME, *NOVERDICT), (name, error)
    assert SECRET not in json.dumps(result)
    assert sorted(p.name for p in host.iterdir()) == ["keep.txt"]
    after = strip(run(BUILTIN_BENIGN))
    assert after == before
