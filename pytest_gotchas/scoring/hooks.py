"""Hooks on a torch module's forward pass that last for one block: every hook registered through a `Hooks` is removed
when the block ends, however it ends (TransformerLens's `hooks()` context manager is the model). Patching, the
screen, the component passes, the float32 head and the attention read-out all hook the model this way, so that a
hook left behind by an error can never change a later pass.

torch's own `register_forward_hook` / `register_forward_pre_hook` do the work; this module only owns their removal.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any

Hook = Callable[..., Any]


class Hooks:
    """`with Hooks() as hooks: hooks.after(module, fn) ...`: the hooks are in place inside the block only."""

    def __init__(self) -> None:
        self._handles: list[Any] = []

    def after(self, module: Any, hook: Hook) -> None:
        """A forward hook, ``hook(module, args, output)``: it sees the module's output, and replaces it by returning
        a value."""
        self._handles.append(module.register_forward_hook(hook))

    def before(self, module: Any, hook: Hook) -> None:
        """A forward pre-hook, ``hook(module, args)``: it sees the module's positional inputs, and replaces them by
        returning a value."""
        self._handles.append(module.register_forward_pre_hook(hook))

    def __enter__(self) -> Hooks:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        while self._handles:
            self._handles.pop().remove()


def counting(hooks: Hooks, model: Any) -> list[int]:
    """A one-element list that counts the model's forward calls while ``hooks`` holds."""
    calls = [0]

    def count(module: Any, args: Any) -> None:
        calls[0] += 1

    hooks.before(model, count)
    return calls
