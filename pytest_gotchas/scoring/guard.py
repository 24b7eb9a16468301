"""What no forward pass of a run may do: take more tokens than the model has positions, or give a non-finite logit.

- **Positions.** A model's position embeddings end somewhere (max_position_embeddings in its config; measured: a
  40,002-token prompt on gemma-3-270m's 32,768 positions ran past 15 minutes at 6.4 GB, and on a model with 1,024
  positions a 3,166-token prompt was scored `ok`). Before any pass, `longest_context` finds the longest context a
  case's readings can pass (the prompt, each step of a candidate's chain, the text reading's chains through shorter
  tokens), and the scorer refuses the case when it does not fit. A forward pre-hook refuses any longer input that
  would still reach the model.
- **Finite logits.** A NaN or infinite logit makes the softmax NaN, and every comparison with NaN is false, so the
  verdict would fall through to MISS; a -inf logit makes a probability that no finite model gives. A forward hook
  notes any non-finite logit of a pass, and the scorer makes the case an error, never a verdict.

The hooks are closures, not bound methods, so that a deep copy of the model (the float32 copy of the precision check)
keeps reporting to the same guard.
"""

from __future__ import annotations

import weakref
from typing import Any

from ..model.numerics import max_positions
from .cut import CutPlan
from .rows import MAX_DEPTH


class TooLong(Exception):
    """An input longer than the model's positions reached its forward pass (and was stopped there)."""

    def __init__(self, tokens: int, positions: int) -> None:
        super().__init__(f"{tokens} tokens for {positions} positions")
        self.tokens, self.positions = tokens, positions


def longest_context(plan: CutPlan, prompt: str, correct: str, wrong: str) -> int:
    """The most tokens any forward pass of this cut's readings can be given: the full prompt (the plain reading),
    the context with every token of a candidate's chain but its last, and the text reading's chains, which add at
    most one token per byte of the text after the context (leaving one byte to read), and at most MAX_DEPTH - 1."""
    chain = max(len(plan.correct_ids), len(plan.wrong_ids)) - 1
    rest = prompt[len(prompt) - plan.backed_off_chars:] if plan.backed_off_chars else ""
    text = max(len((rest + candidate).encode()) for candidate in (correct, wrong)) - 1
    return max(len(plan.prompt_ids), len(plan.context_ids) + max(chain, min(text, MAX_DEPTH - 1)))


class Guard:
    """The hooks on one model: `positions` (None when its config does not say) and whether a logit of a pass since
    the last `reset` was not finite. One per model (`Guard.of`), however many scorers use it."""

    @classmethod
    def of(cls, model: Any) -> Guard:
        guard = _GUARDS.get(model)
        if guard is None:
            guard = _GUARDS[model] = cls(model)
        return guard

    def __init__(self, model: Any) -> None:
        self._model = weakref.ref(model)  # the registry holds models weakly: a released model is freed
        self.positions = max_positions(getattr(model, "config", None))
        self.non_finite = False
        guard = self

        def before(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            ids: Any = kwargs.get("input_ids", args[0] if args else None)
            length = int(ids.shape[-1]) if getattr(ids, "ndim", 0) else 0
            if guard.positions is not None and length > guard.positions:
                raise TooLong(length, guard.positions)

        def after(module: Any, args: tuple[Any, ...], output: Any) -> None:
            import torch

            logits = getattr(output, "logits", None)
            if isinstance(logits, torch.Tensor) and not bool(torch.isfinite(logits).all()):
                guard.non_finite = True

        self.handles = [model.register_forward_pre_hook(before, with_kwargs=True),
                        model.register_forward_hook(after)]

    def reset(self) -> None:
        self.non_finite = False

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
        model = self._model()
        if model is not None:
            _GUARDS.pop(model, None)


_GUARDS: weakref.WeakKeyDictionary[Any, Guard] = weakref.WeakKeyDictionary()


class _NoGuard:
    """For a model with no torch module to hook (read through vLLM): its positions are the engine's to refuse, its
    probabilities are still checked for NaN by the scorer."""

    positions: int | None = None
    non_finite = False

    def reset(self) -> None:
        pass


NO_GUARD = _NoGuard()
