"""The closed sets of values that travel between the floors, each one type on the ground floor. Pure.

Each is a `StrEnum`: a member is its string (so the JSON a report writes is byte for byte what the bare strings
wrote, and a report read back validates each value against its set), the committed JSON Schema lists every set's
values, and the type checker sees a misspelt value where a bare string would pass. The verdicts and statuses live
with their rules in verdict.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ReadingName(StrEnum):
    """The name a run keeps a reading under (schema.Run.readings; a one-pass check adds ``<name>/separate``)."""

    TEXT = "text"  # the probability that the output, as text, continues with each candidate
    TOKEN = "token"  # the write-up's reading at the cut
    PLAIN = "plain"  # the naive single-token reading at the full prompt, when the token reading is not plain
    OTHER_SOFTMAX = "other-softmax"  # the same logits through the other softmax dtype
    PRECISION = "precision"  # the verdict's reading in float32 (--gotchas-precision-check)


class ReadingKind(StrEnum):
    """How a reading read the candidates: as text, or the token reading's kind of cut (scoring/cut.py)."""

    TEXT = "text"
    PLAIN = "plain"  # one token each, at the prompt's own tokens
    HEALED = "healed"  # one token each, backed off to a clean token boundary
    CHAIN = "chain"  # a chain of tokens up to the first that reaches past the cut


class TextPath(StrEnum):
    """How the text reading's contexts past a prompt (its chains through shorter tokens) were computed for a model
    (schema.ModelInfo.text_path; a baseline header records it): the numbers differ in their last bits between them."""

    TREE = "tree"  # every context of a prompt in one call on its KV cache, under a tree mask (scoring/tree.py)
    STEPS = "steps"  # one call per context on the KV cache: the model's attention takes no tree mask
    CONTEXTS = "contexts"  # each context a prompt of its own: a backend that reads logits by context (vLLM)


class ComponentKind(StrEnum):
    """A component of a decoder layer that patching reads and replaces (scoring/components.py)."""

    ATTN = "attn"  # the attention block's write to the residual stream
    MLP = "mlp"  # the MLP block's write
    HEAD = "head"  # one query head's output, its slice of o_proj's input


class ComponentsMethod(StrEnum):
    """schema.Components.method: the exact grid with the screen beside it, or the screen with its top-k verified."""

    EXACT = "exact"
    SCREEN = "screen"


class PatchMethod(StrEnum):
    """How a patching grid's cells were computed (scoring/patching.py): one pass per cell, a batch per layer, or a
    batch per layer that starts from the layer's own input."""

    FULL = "full"
    LAYER_BATCH = "layer-batch"
    FROM_LAYER = "from-layer"


class PatchMetric(StrEnum):
    """Where patching's logit difference is computed: the model's head in its dtype, or a float32 head over the
    same hidden states (scoring/head.py)."""

    MODEL = "model"
    FLOAT32 = "float32"


class PairVerdict(StrEnum):
    """A pair's verdict in a baseline: both members ok, or not."""

    PASS = "pass"
    FAIL = "fail"


class Leader(StrEnum):
    """Who leads after a layer (results/layers.py); an exact tie is nobody's lead."""

    CORRECT = "correct"
    WRONG = "wrong"
    TIE = "tie"
    FLOOR = "within-floor"  # closer than the effect floor (results/effects.lead_under_floor): nobody's lead either


@dataclass(frozen=True, order=True)
class Cell:
    """One component at one aligned position of a patched direction: the unit patching reads, replaces and ranks
    (the exact grid, the screen, its verification). ``head`` is the query head for HEAD, else 0; ``position``
    indexes the direction's aligned positions. Ordered as its fields, so that a sort of cells is a sort by kind,
    layer, head and position."""

    kind: ComponentKind
    layer: int
    head: int
    position: int


class PatchMode(StrEnum):
    """What patching a run asked for (--gotchas-patch, -patch-components, -patch-screen; settings/wiring.py makes
    one from the three flags): the residual grid alone, with the exact component grid and the screen beside it, or
    with the screen's verified top-k alone. A direction's components record which ran as ComponentsMethod."""

    RESIDUAL = "residual"
    COMPONENTS = "components"
    SCREEN = "screen"


class FamilyKind(StrEnum):
    """What a family draws instances of (cases/families.py)."""

    PAIR = "pair"
    TWIN = "twin"
    CASE = "case"


class IntervalMethod(StrEnum):
    """How an interval was computed (results/stats.py, results/clustering.py): Wilson's on a count of independent
    units, or on one whose units come in families (its design effect and t on families - 1 degrees of freedom);
    Student's t on a mean of independent differences, or on one whose differences come in families (cluster-robust
    standard error, t on families - 1). The clustered methods are named only where some family holds more than one
    unit: with every unit its own family they are the plain methods, number for number."""

    WILSON = "wilson"
    WILSON_CLUSTERED = "wilson-design-effect"
    T = "t"
    T_CLUSTERED = "cluster-t"


class EdgeNode(StrEnum):
    """An edge's upstream end (--gotchas-patch-edges, scoring/edgegraph.py): what writes to the residual stream."""

    EMBED = "embed"  # the token embeddings
    HEAD = "head"  # one query head's output (its o_proj slice; under a post-norm, its share as edgegraph.py defines)
    MLP = "mlp"  # an MLP block's write (after its post-norm where the model has one)


class EdgeInput(StrEnum):
    """An edge's downstream end: the input that reads the residual stream."""

    QUERY = "q"  # one query head's query input
    KEY = "k"  # one key-value head's key input
    VALUE = "v"  # one key-value head's value input
    MLP = "mlp"  # an MLP block's input
    LOGITS = "logits"  # the final norm and the head, at the cut


class EdgeCorruption(StrEnum):
    """What a circuit's corrupted edges read (--gotchas-patch-edges-corrupt, scoring/chaptermean.py): the partner's
    write (the pair's own difference), or the mean over the chapter's prompts of the node's write (MIB's mean
    ablation). The scores and the exact verification of the top edges are the pair's either way."""

    PARTNER = "partner"
    MEAN = "mean"


class SlotKind(StrEnum):
    """What a slot of a family draws (cases/slots.py): an identifier from a pool, an integer from a range, a string
    literal, container contents, an order of operands, an unrelated statement, or one of listed fragments of code."""

    NAME = "name"
    INT = "int"
    TEXT = "text"
    ITEMS = "items"
    ORDER = "order"
    STATEMENT = "statement"
    CHOICE = "choice"


class Under(StrEnum):
    """Why a patched direction's effect is under the floor (results/effects.py): no fraction is taken of it."""

    NO_EFFECT = "no-effect"  # the source's metric equals the target's
    FLOOR = "floor"  # below the floor's steps of the metric's dtype and below its logits
    NOISE = "noise"  # within the floor's steps of the kernels' measured disagreement (a check whose premise failed)
