"""How the text reading's chains past a prompt were computed, in words: the run's line on its KV-cached contexts (one
tree per prompt, or steps), and a baseline comparison's cause when the baseline computed them otherwise."""

from __future__ import annotations

from ..results.baselines import FactChange, Header, Numerics
from ..results.onepass import Stepped
from ..results.vocabulary import TextPath


def stepped_line(s: Stepped) -> str:
    """How the runs were read, when some text-reading contexts were computed on a pass's KV cache: as one tree per
    prompt, or (a model whose attention takes no tree mask, or a report that does not say) as steps."""
    several = len(s.paths) > 1
    ways = [_stepped_way(p.text_path, p.attention, f"{p.model}: " if several else "") for p in s.paths]
    how = "; ".join(dict.fromkeys(ways)) if ways else _stepped_way(None, "", "")
    return (f"one pass per prompt: {s.forward_passes} full forward passes for {s.runs} runs; {s.steps} text-reading "
            f"contexts in {s.stepped_runs} runs read {how}, which can differ from separate passes in their last bits "
            "(--gotchas-one-pass-check lists what differs)")


def _stepped_way(path: TextPath | None, attention: str, model: str) -> str:
    if path == TextPath.TREE:
        return f"{model}as one tree per prompt on its pass's KV cache (every chain in one call, a tree attention mask)"
    refused = f" (its attention, {attention}, takes no tree mask)" if path == TextPath.STEPS and attention else ""
    return f"{model}as incremental steps on a pass's KV cache{refused}"


# How the text reading's chains past a prompt were computed (results/vocabulary.TextPath), as a comparison says it.
TEXT_PATHS: dict[str, str] = {TextPath.TREE: "one tree per prompt (every chain in one call on its KV cache)",
                              TextPath.STEPS: "steps on the KV cache, one call per context",
                              TextPath.CONTEXTS: "prompts of their own"}


def text_path_text(change: FactChange, check: Numerics, recorded: Header, now: Header) -> str:
    """A baseline whose text reading computed its chains otherwise: that is the cause its numbers differ by, and the
    fingerprint's change with it (it probes the path), not other kernels."""
    return (f"  same model, the text reading's chains computed another way: as "
            f"{TEXT_PATHS.get(change.recorded, change.recorded)} when recorded, as "
            f"{TEXT_PATHS.get(change.now, change.now)} now, whose arithmetic rounds otherwise in the last bits (the "
            f"numerics fingerprint probes that path, so it differs too: {recorded.numerics or 'not recorded'}, now "
            f"{now.numerics}): probabilities differ from the baseline's in {len(check.differing)} cases; "
            f"{len(check.changed)} verdicts changed" + (f" ({', '.join(check.changed)})" if check.changed else ""))
