"""Which variables a case may set for its snippet (a chapter's or case's `env:`, a shell case's `NAME=value`
prefix, `gotchas new --env`).

The variables reach only the snippet's interpreter, inside its sandbox (truth/sandbox.py passes them to the
supervisor as data, never as its environment). Still, a variable that changes how a process starts is refused by
name: it would make the transcript a fact about the loader or the start-up, not about the program, and it is what an
attacker reaches for first. Pure: no I/O.
"""

from __future__ import annotations

# The dynamic loader's (every LD_*), glibc's start-up tunables (GLIBC_TUNABLES and the MALLOC_* switches it reads
# at start-up), and the variables that make glibc load code or data from a path (iconv modules, locales, messages).
_LOADER_PREFIXES = ("LD_", "MALLOC_")
_LOADER = frozenset({"GLIBC_TUNABLES", "GCONV_PATH", "LOCPATH", "NLSPATH", "GETCONF_DIR"})
# Python's start-up and path variables: each runs or imports other code, moves where modules come from, or
# changes the REPL that collection drives (it sets PYTHONSTARTUP, PYTHONPATH and PYTHON_BASIC_REPL itself).
_PYTHON = frozenset({
    "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PYTHONINSPECT", "PYTHONUSERBASE", "PYTHONNOUSERSITE",
    "PYTHONSAFEPATH", "PYTHONPLATLIBDIR", "PYTHONEXECUTABLE", "PYTHONCASEOK", "PYTHONPYCACHEPREFIX",
    "PYTHON_BASIC_REPL", "PYTHONBREAKPOINT", "PYTHON_HISTORY",
    "__PYVENV_LAUNCHER__",
})
# What the launch chain reads: util-linux's debug switches, bubblewrap's, and the supervisor's plan.
_LAUNCHER_PREFIXES = ("GOTCHAS_", "LIBMOUNT_", "LIBBLKID_", "LIBSMARTCOLS_", "LIBFDISK_", "BWRAP_")
# Allowed although Python reads it at start-up: PYTHONHASHSEED. Collection sets it itself (a different seed each
# run, to catch hash-order answers), and a case pins it to show one order (cases/2-sets.yaml).


def refused(name: str) -> str | None:
    """Why a case may not set the variable `name` (None: it may)."""
    if name.startswith(_LOADER_PREFIXES) or name in _LOADER:
        return "it changes how the dynamic loader starts every program"
    if name in _PYTHON:
        return "it changes how Python starts or where it imports from, which collection sets itself"
    if name.startswith(_LAUNCHER_PREFIXES):
        return "the programs that confine the snippet read it"
    return None


def message(name: str) -> str | None:
    """The sentence a refused variable gets after `file:line: case 'id': `."""
    why = refused(name)
    if why is None:
        return None
    return (f"the variable {name} cannot be set for a snippet: {why}; a case's variables may change what the "
            "program does, not how a process starts (docs/cases.md)")
