"""A tiny real transformers model whose next-token logits are set by hand.

The folder it writes loads through the same code path as a user's model
(``load_model(ModelSpec(name=str(path), ...))``): a Gemma3 causal LM with one layer
and a fast BPE tokenizer over single characters plus a few merges.

How the logits are made exact: embeddings are one-hot (1.0), scaled by Gemma's
sqrt(hidden_size) = 16; the attention and MLP output projections are zero, so the
residual stream at the last position is 16 * onehot(last token); the final RMSNorm
divides by rms = 1 and multiplies by (1 + w) = 1/16, giving exactly onehot(last
token); so the logits are the lm_head column of the last token, which holds
``rules[token]``. Logits are stored in bfloat16, so pass bfloat16-representable
values (small integers, halves, quarters) to get exactly the logits you asked for;
equal logits give exactly equal probabilities.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

from pytest_gotchas.model.convert import no_progress_bars

HIDDEN_SIZE = 256  # sqrt is 16 (exact), and it bounds the vocabulary size
LOW_LOGIT = -16.0  # every next token a rule does not name
SPECIAL_TOKENS = ("<pad>", "<eos>", "<bos>", "<unk>")  # ids 0..3, Gemma's order for pad/eos/bos
CHARACTERS = tuple(string.printable[:95]) + ("\n",)  # printable ASCII; no "█", which is unknown
DEFAULT_MERGES = ("),", ")]", "')", "'.")


def build_vocab(merges: list[str] | tuple[str, ...] = DEFAULT_MERGES) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Vocabulary (token -> id) and BPE merge pairs, in priority order."""
    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS + CHARACTERS)}
    pairs = []
    for merged in merges:
        pair = _split_merge(merged, vocab)
        pairs.append(pair)
        vocab.setdefault(merged, len(vocab))
    if len(vocab) > HIDDEN_SIZE:
        raise ValueError(f"vocabulary of {len(vocab)} tokens exceeds hidden size {HIDDEN_SIZE}")
    return vocab, pairs


def _split_merge(merged: str, vocab: dict[str, int]) -> tuple[str, str]:
    # The longest left part that is already a token, with a right part that is one too.
    for cut in range(len(merged) - 1, 0, -1):
        left, right = merged[:cut], merged[cut:]
        if left in vocab and right in vocab:
            return left, right
    raise ValueError(f"merge {merged!r} is not two existing tokens")


def build_tokenizer(merges: list[str] | tuple[str, ...] = DEFAULT_MERGES, adds_bos: bool = True):
    """A transformers fast tokenizer: BPE over characters, "<bos>" prepended (unless `adds_bos` is false, as
    SmolLM2's GGUF metadata says of its own), "<unk>" for the rest."""
    from tokenizers import Tokenizer, decoders, models, processors
    from transformers import PreTrainedTokenizerFast

    vocab, pairs = build_vocab(merges)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=pairs, unk_token="<unk>"))
    backend.add_special_tokens(list(SPECIAL_TOKENS))
    if adds_bos:
        backend.post_processor = processors.TemplateProcessing(
            single="<bos> $A", pair="<bos> $A <bos> $B", special_tokens=[("<bos>", vocab["<bos>"])]
        )
    backend.decoder = decoders.Fuse()  # tokens are literal text: concatenate them
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<bos>",
        eos_token="<eos>",
        unk_token="<unk>",
        pad_token="<pad>",
        clean_up_tokenization_spaces=False,
    )


def build_tiny_model(
    path: Path,
    rules: dict[str, dict[str, float]],
    merges: list[str] | tuple[str, ...] = DEFAULT_MERGES,
    window_rules: dict[str, dict[str, float]] | None = None,
    window: int = 12,
    adds_bos: bool = True,
    head_dim: int = 8,
) -> Path:
    """Write a model folder into ``path`` whose logits after token t are ``rules[t]``.

    ``rules`` maps a token string (the last token of the prompt) to {next token: logit};
    every other next token gets ``LOW_LOGIT``, and a last token without a rule gives a
    uniform distribution.

    ``window_rules`` makes the model look back: when one of its tokens occurs among the
    last ``window`` tokens (sliding-window attention with uniform weights), the logits
    become (rules[last] + window_rules[that token]) / sqrt(2), up to bfloat16 rounding.
    That is how a primer's last answer can change the verdict (prime-dep). Window tokens
    must not also be last tokens of a prompt, and at most one may be in the window.

    ``head_dim``: the attention head's size. The logits do not depend on it (queries are zero, attention is
    uniform); vLLM's CPU attention takes only some sizes (32, 64, 80, ...; not 8), so its tests build 32.
    """
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    tokenizer = build_tokenizer(merges, adds_bos)
    vocab = tokenizer.get_vocab()
    vocab_size = len(vocab)
    config = Gemma3TextConfig(
        vocab_size=vocab_size,
        hidden_size=HIDDEN_SIZE,
        intermediate_size=8,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        head_dim=head_dim,
        query_pre_attn_scalar=head_dim,
        max_position_embeddings=1024,
        sliding_window=window if window_rules else 1024,
        layer_types=["sliding_attention" if window_rules else "full_attention"],
        rms_norm_eps=1e-10,  # 1 + eps == 1 in float32: the final norm is exact in every dtype
        tie_word_embeddings=False,
        final_logit_softcapping=None,
        attn_logit_softcapping=None,
        pad_token_id=vocab["<pad>"],
        eos_token_id=vocab["<eos>"],
        bos_token_id=vocab["<bos>"],
    )
    torch.manual_seed(0)
    model = Gemma3ForCausalLM(config)
    inner = model.model
    with torch.no_grad():
        inner.embed_tokens.weight.zero_()
        inner.embed_tokens.weight[:, :vocab_size].copy_(torch.eye(vocab_size))
        window_rules = window_rules or {}
        if len(window_rules) > config.head_dim:
            raise ValueError(f"at most {config.head_dim} window tokens")
        for layer in inner.layers:
            attention = layer.self_attn
            attention.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
            # q = 0: uniform attention over the window; value k carries window token k into its own residual
            # direction, which the post-attention norm scales to the size of the token's own embedding.
            attention.q_proj.weight.zero_()
            attention.v_proj.weight.zero_()
            for k, token in enumerate(window_rules):
                attention.v_proj.weight[k, _token_id(vocab, token)] = 1.0
                attention.o_proj.weight[_token_id(vocab, token), k] = 1.0
        inner.norm.weight.fill_(1.0 / 16 - 1.0)  # (1 + w) undoes the sqrt(hidden) embedding scale
        head = torch.full((vocab_size, HIDDEN_SIZE), LOW_LOGIT)
        for last, nexts in {**rules, **window_rules}.items():
            for token, logit in nexts.items():
                head[_token_id(vocab, token), _token_id(vocab, last)] = logit
        head[:, vocab_size:] = 0.0
        model.lm_head.weight.copy_(head)
    return save_folder(model.to(torch.bfloat16).eval(), path, tokenizer)


def save_folder(model, path: Path, tokenizer=None) -> Path:
    """The model and the tiny tokenizer as a folder that loads through the same code path as a user's model."""
    path.mkdir(parents=True, exist_ok=True)
    with no_progress_bars():
        model.save_pretrained(path)
    (tokenizer or build_tokenizer()).save_pretrained(path)
    _pin_tokenizer_class(path)
    return path


def layer_writing_llama(writes: list[dict[int, float]], readout: dict[int, int], vocab_size: int, gain: float = 1.0,
                        **special_ids: int):
    """A bfloat16 Llama whose layer k adds ``writes[k-1]`` ({direction: amount}) to the residual stream, whatever
    the input: a model whose lead changes hands at the layers you choose.

    Every token embeds as direction 0; attention writes nothing (o_proj = 0); the MLP's weights are 0 and its
    down_proj bias is the write. The head reads token t from direction ``readout[t]`` times ``gain`` (other tokens
    read 0), so after each layer a token's logit is its direction of the residual stream, scaled alike by the final
    norm. ``special_ids``: bos_token_id, eos_token_id, pad_token_id for the config.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=vocab_size, hidden_size=8, intermediate_size=8, num_hidden_layers=len(writes),
                         num_attention_heads=1, num_key_value_heads=1, head_dim=8, mlp_bias=True,
                         max_position_embeddings=256, tie_word_embeddings=False, **special_ids)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        model.model.embed_tokens.weight.zero_()
        model.model.embed_tokens.weight[:, 0] = 1.0
        for layer, write in zip(model.model.layers, writes):
            layer.self_attn.o_proj.weight.zero_()
            for linear in (layer.mlp.gate_proj, layer.mlp.up_proj, layer.mlp.down_proj):
                linear.weight.zero_()
                linear.bias.zero_()
            for direction, amount in write.items():
                layer.mlp.down_proj.bias[direction] = amount
        model.lm_head.weight.zero_()
        for token, direction in readout.items():
            model.lm_head.weight[token, direction] = gain
    return model.to(torch.bfloat16).eval()


def _token_id(vocab: dict[str, int], token: str) -> int:
    if token not in vocab:
        raise KeyError(f"{token!r} is not a token of the tiny vocabulary")
    return vocab[token]


def _pin_tokenizer_class(path: Path) -> None:
    # config.json says gemma3_text, which would make AutoTokenizer rebuild a Gemma
    # tokenizer; this folder's tokenizer.json must be used as it is.
    config_path = path / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_path.write_text(json.dumps(config, indent=2) + "\n")


# Thirty two-character tokens over `a`-`f` and `g`-`k`: merged into the vocabulary, then their merges dropped.
UNMERGED = tuple(first + second for first in "abcdef" for second in "ghijk")


def build_unfaithful_model(path: Path, rules: dict[str, dict[str, float]]) -> Path:
    """A tiny model whose tokenizer fails the converter's round trip (model/convert.py): its vocabulary holds
    UNMERGED, but its tokenizer.json has no merges that make them, so each tokenizes back as two characters (96 of
    130 sampled tokens back: below the 95% a faithful tokenizer gives), as a folder with a broken tokenizer.json
    would."""
    build_tiny_model(path, rules, merges=DEFAULT_MERGES + UNMERGED)
    tokenizer = json.loads((path / "tokenizer.json").read_text(encoding="utf-8"))
    tokenizer["model"]["merges"] = []
    (path / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    return path
