"""The JSON report's format numbers: which one this version writes, which older ones it migrates, and the words for
one it refuses. The migration runs inside pydantic's validation of the document (results/report.py's ReportFile, a
`model_validator(mode="before")`, as inspect_ai's log migrates its older files), so that every way of reading a
report reads an older one the same way; results/reading.py names the file in the refusals.

What each format is, from the history of results/schema.py and report.schema.json:

1. the first report: one model, the chapters with their counts (not which cases make their pairs and twins), a
   run's one reading flat in the run;
2. the same cases with `chapter_info` and `model` by id, the models described once, the baseline sections as
   sentences (`lines`), and `recorded` a header of strings;
3. typed (report.schema.json): results refer to their chapter and model by key; the baseline sections are facts;
4. the schema of the last format 3 (the bump changed no field): what format 3 gained while it was current (intervals,
   Holm-corrected comparisons, twins' splits, margin differences, patching's tokens and resolution, a baseline
   header's reading, BOS and kernels), numbered once;
5. what the house's second pass and the component analysis added: each chapter's primers (`primers`, and a
   baseline comparison's `numerics.primers`), GradDrop's score of a screened cell (`graddrop`), the screen's recall
   by its plain ranking (`recall_plain`) and the top heads' attention at the cut (`patterns`); `status` and
   `verdict` now listed as enums (the same strings);
6. the screen alone and what patching cost: a direction's components say which `method` ran ("exact": the grid with
   the screen beside it; "screen": the screen and its verified top-k alone, empty grids), and the wall seconds of
   each method per direction (`seconds` of the residual grid; `grid_seconds`, `screen_seconds`, `verify_seconds`);
7. how the run ended, in its `run`: pytest's `exit_status`, whether it was `interrupted` before every selected item
   ran, what `stopped_by` it, and the items that never ran (`not_run`); the models' differences in nats renamed
   `log_ratios` (was `margins`), each a t interval with the `cases_needed` for a direction; whether a model's
   tokenizer was let through its round trip (`allow_unfaithful_tokenizer`); and the closed sets (a reading's
   `kind`, a component's `kind`, the patching `method`s, a baseline pair's state) listed as enums (the same
   strings).
8. families (cases/families.py) and the statistics that respect them: each chapter's `families`, by family id, with
   its kind, seed and instances (the unit each made and its slot values; instance zero, the hand-written unit,
   first), empty where a run drew none; the interval kinds named as an enum (`wilson`, `wilson-design-effect`, `t`,
   `cluster-t`); a rollup's `pairs_clustered` (the paired instances passed with the interval that accounts for the
   families); a comparison's and a twins' test's `clusters` and whether they are `clustered` (their p then the
   sign-flip test's over families), a comparison's `families_needed` and `units_needed` for the difference seen; a
   log ratio difference's `clusters`; and the `family_shares` section (per family, its instances passed beside
   instance zero's verdict); a patched direction's `edges` (--gotchas-patch-edges: the top edges by EAP-IG with
   their EAP scores and exact values, the faithfulness curve of circuits of the top edges and MIB's areas over it,
   results/circuits.py), with what the circuits' corrupted edges read (`corrupt`: "partner", the source's write, or
   "mean", the mean over the chapter's `mean_of` prompts; --gotchas-patch-edges-corrupt); and effects worth
   explaining: a patched direction's effect `floor` (the floor it was held to, the magnitude its steps were counted
   at, the kernels' measured `noise`, and why it fell `under`; under it `fractions` is null), a component grid's
   `heads_apart` (every head against the attention write, measured where the kernels round o_proj's row otherwise in
   another shape) and the screen's `score` against the grid (overlap, mass, the verified-recall curve's `found_at`
   and its `area`), replacing format 7's `recall` and `recall_plain` (a line at 10% of the effect: not read); a
   layer reading's `under_floor`; and the computed section `effects`: per chapter and model, the directions under
   the floor by why, the screen summed, the components that recur; and how a model computed the text reading's
   chains past a prompt (`text_path`: one tree per prompt, steps, or prompts of their own) and its `attention`
   implementation; a process's `tree_calls` and `tree_contexts`; a baseline header's `text_path`.

Format 3 migrates: its data sections read as they are (every field added during format 3 has a default that says
"not recorded": `incremental_steps` 0, patching's `source_tokens` empty and `step` 0.0, a baseline header's `reading`
""...), and its computed sections are dropped, because they were computed by the rules of the version that wrote
them (comparisons without Holm's correction, rollups without intervals) and a reader computes them again from the
data. Format 4 migrates as it is: format 5 only added fields whose defaults say "not recorded" (no primers, no
GradDrop score, no patterns), and changed no rule a computed section follows; so does format 5 (its components were
all "exact", its seconds are not recorded: 0.0), and so does format 6 (how it ended is not recorded: `exit_status`
None, not `interrupted`, nothing listed as not run; a partial run of format 6 cannot be told from a whole one; its
`margins` section is a former one, dropped and computed again as `log_ratios`), and so does format 7 (it records no
families, no edges and no floor: every unit is its own, every statistic is what format 7 computed, its fractions
are shown as they were; no score, no `heads_apart`; its `recall` keys are not read; the `effects` section is
computed again; its models' `text_path` is not recorded: None, as a model read before the tree was a path; no
tree calls). Formats 1 and 2 are refused (UNMIGRATABLE says why): a migration would have to guess what they do
not record.
"""

from __future__ import annotations

from typing import Any

FORMAT = 8
# The sections a writer computes from the data and a reader computes again (ReportFile's last eight): the one list
# that the migration drops and results/report.py's inconsistencies() checks, section by section.
COMPUTED_SECTIONS = ("pairs", "rollups", "comparisons", "twin_splits", "log_ratios", "family_shares",
                     "one_pass_check", "effects")
# Computed sections of older formats under names no longer written (`margins`: `log_ratios` before it was renamed):
# dropped by the migration and ignored by a reader, which computes the section again under its new name.
FORMER_SECTIONS = ("margins",)
# Older formats that cannot be migrated without guessing, and why.
UNMIGRATABLE = {
    1: "its chapters state their pair and twin counts but not which cases make them, its model has no id and does "
       "not record the hardware its numbers came from, and its runs hold one reading, not readings by name",
    2: "its baseline sections hold sentences, not the facts a report states now (whether the file was missing, this "
       "run's header, what an update wrote)",
}


class FormatRefused(ValueError):
    """A report of a format this version cannot read: newer than FORMAT, or older and not migratable. The message
    says both format numbers; results/reading.py says it of the file."""

    def __init__(self, found: int, why: str) -> None:
        self.found, self.why = found, why
        super().__init__(self.said_of("the report"))

    def said_of(self, name: str) -> str:
        return f"{name} is JSON format {self.found}, {self.why}"


def refusal(found: int) -> FormatRefused | None:
    """Why a document of format `found` cannot be read, or None when it can (FORMAT, or an older format that
    migrates)."""
    if found > FORMAT:
        return FormatRefused(found, f"newer than format {FORMAT} that this pytest-gotchas reads (it migrates "
                                    f"{_migrated()}): read it with a version that reads format {found}")
    if found < FORMAT and found not in MIGRATIONS:
        why = UNMIGRATABLE.get(found, "no version of pytest-gotchas wrote it")
        return FormatRefused(found, f"which cannot be migrated to format {FORMAT}: {why}; run it again with this "
                                    f"version to write a report of format {FORMAT}")
    return None


def _from_3(data: dict[str, Any]) -> dict[str, Any]:
    return {**{k: v for k, v in data.items() if k not in COMPUTED_SECTIONS + FORMER_SECTIONS}, "format": 4}


def _from_4(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "format": 5}


def _from_5(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "format": 6}


def _from_6(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "format": 7}


def _from_7(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "format": 8}


# format -> the function that turns a document of it into one of the next format. Every format below FORMAT is here
# or in UNMIGRATABLE (tests/unit/results/test_reading.py): the commit that bumps FORMAT says which.
MIGRATIONS = {3: _from_3, 4: _from_4, 5: _from_5, 6: _from_6, 7: _from_7}


def _migrated() -> str:
    return ", ".join(f"format {n}" for n in sorted(MIGRATIONS)) or "no older format"


def migrate(data: Any) -> Any:
    """A document of format FORMAT from one of an older format that migrates (a new dict; `data` is left as it is);
    anything else that is not a mapping (the arguments of a constructor call) as it is. Raises FormatRefused."""
    if not isinstance(data, dict) or not isinstance(data.get("format"), int):
        return data  # pydantic says a missing or mistyped `format` by itself
    problem = refusal(data["format"])
    if problem is not None:
        raise problem
    while data["format"] < FORMAT:
        data = MIGRATIONS[data["format"]](data)
    return data
