"""An attention implementation of the user's own, as transformers lets one be registered: it computes what sdpa
computes, but the plugin cannot know what it does with a mask, so the text reading keeps its per-context steps."""

from __future__ import annotations

from typing import Any

OWN = "gotchas-own"


def own_attention(model: Any) -> Any:
    """`model` switched to OWN (registered once, globally, as sdpa's function and mask)."""
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(OWN, sdpa_attention_forward)
    AttentionMaskInterface.register(OWN, sdpa_mask)
    model.set_attn_implementation(OWN)
    return model
