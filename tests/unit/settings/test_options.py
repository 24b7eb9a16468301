"""Options are declared once (options.py): docs/options.md's table, the plugin's flags and ini names and `gotchas
new`'s command line follow the declarations, and each value is validated by its declaration.
tests/plugin/test_options.py gives bad values on a command line and in an ini file."""

from __future__ import annotations

import dataclasses
import re

import pytest
from helpers import REPO

from pytest_gotchas.cli import build_parser
from pytest_gotchas.settings.options import BY_NAME, OPTIONS, Option, OptionError, Settings, settings


def table_rows() -> dict[str, list[str]]:
    rows = {}
    for line in (REPO / "docs" / "options.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `--gotchas") and len(cells) == 4:
            rows[cells[0].strip("`").split()[0]] = cells
    return rows


def test_the_options_page_lists_every_option_with_its_ini_twin_and_default() -> None:
    rows = table_rows()
    assert list(rows) == [o.flag for o in OPTIONS]
    for option in OPTIONS:
        flag = f"`{option.flag}{' ' + option.metavar if option.metavar else ''}`"
        assert rows[option.flag][:3] == [flag, f"`{option.ini}`", option.shown], option.name


def test_gotchas_new_offers_the_shared_options_under_their_short_names() -> None:
    new = build_parser()._subparsers._group_actions[0].choices["new"]  # type: ignore[union-attr]
    flags = {flag for action in new._actions for flag in action.option_strings}
    shared = [o for o in OPTIONS if o.cli]
    assert {o.cli_flag for o in shared} <= flags
    assert not any(flag.startswith("--gotchas") for flag in flags)


@pytest.mark.parametrize("name, raw, message", [
    ("timeout", "nan", "must be a number of seconds, more than 0 and at most 86400, got 'nan'"),
    ("timeout", "inf", "must be a number of seconds, more than 0 and at most 86400, got 'inf'"),
    ("timeout", "1e300", "must be a number of seconds, more than 0 and at most 86400, got '1e300'"),
    ("timeout", "-1", "must be a number of seconds, more than 0 and at most 86400, got '-1'"),
    ("timeout", "soon", "expects a number of seconds, more than 0 and at most 86400, got 'soon'"),
    ("runs", "1", "must be a whole number from 2 to 100, got 1"),
    ("runs", "99999999999999999999", "must be a whole number from 2 to 100, got 99999999999999999999"),
    ("runs", "2.5", "expects a whole number from 2 to 100, got '2.5'"),
    ("top_k", "0", "must be a whole number from 1 to 1000, got 0"),
    ("top_k", "1001", "must be a whole number from 1 to 1000, got 1001"),
    ("batch_size", "x", "expects a whole number from 1 to 1024, got 'x'"),
    ("batch_size", "1025", "must be a whole number from 1 to 1024, got 1025"),
    ("vllm_tensor_parallel", "4096", "must be a whole number from 1 to 1024, got 4096"),
    ("vllm_pipeline_parallel", "0", "must be a whole number from 1 to 1024, got 0"),
    ("vllm_memory", "2", "must be more than 0 and at most 1, got '2'"),
    ("dtype", "int8", "must be one of bfloat16, float16, float32, got 'int8'"),
    ("patch_metric", "bfloat16", "must be one of model, float32, got 'bfloat16'"),
    ("patch_edges_steps", "0", "must be a whole number from 1 to 1000, got 0"),
    ("patch_edges_k", "1001", "must be a whole number from 1 to 1000, got 1001"),
    ("patch_floor_steps", "-1", "must be a number from 0 to 1024, got '-1'"),
    ("patch_floor_logits", "nan", "must be a number from 0 to 100, got 'nan'"),
    ("patch_floor_logits", "a few", "expects a number from 0 to 100, got 'a few'"),
])
def test_each_value_is_validated_by_its_declaration(name: str, raw: str, message: str) -> None:
    with pytest.raises(OptionError) as error:
        BY_NAME[name].convert(raw)
    assert str(error.value) == message


def test_every_numeric_option_has_a_ceiling() -> None:
    """An unbounded count or duration is refused where it is declared, whatever the source (issue: an ini
    `gotchas_runs = 99999999999999999999` ran out of memory, `gotchas_timeout = 1e300` overflowed in collection)."""
    for option in OPTIONS:
        if option.kind == "value" and isinstance(option.default, (int, float)) and not isinstance(option.default, bool):
            with pytest.raises(OptionError, match="at most|to [0-9]+,|less than 1"):
                option.convert("1e300" if isinstance(option.default, float) else "9" * 20)


def test_flags_and_ini_names_follow_the_option_name() -> None:
    option = Option("softmax_dtype", "help")
    assert (option.flag, option.ini, option.cli_flag) == ("--gotchas-softmax-dtype", "gotchas_softmax_dtype",
                                                          "--softmax-dtype")
    assert (BY_NAME["enabled"].flag, BY_NAME["enabled"].ini) == ("--gotchas", "gotchas")
    assert re.fullmatch(r"--gotchas(-[a-z0-9]+)*", BY_NAME["update_baseline"].flag)


def test_each_option_is_one_settings_field_whose_default_is_the_options() -> None:
    """The defaults are written once, on Settings' fields: the table reads them, and a run given nothing gets them."""
    assert [option.name for option in OPTIONS] == [spec.name for spec in dataclasses.fields(Settings)]
    given_nothing = settings({})
    assert given_nothing == Settings()
    for option in OPTIONS:
        assert getattr(given_nothing, option.name) == option.default, option.name
    assert (BY_NAME["top_k"].default, BY_NAME["timeout"].shown, BY_NAME["models"].default) == (5, "10", [])
    assert BY_NAME["python"].default == {} and BY_NAME["json"].default is None and BY_NAME["strict"].shown == "off"


def test_every_choice_is_offered_as_a_plain_string() -> None:
    """argparse names a choice by its repr: a closed set's member (PatchMetric, IsolationLevel) would be offered as
    "<PatchMetric.MODEL: 'model'>" in the usage error."""
    from pytest_gotchas.settings.options import OPTIONS

    offered = {option.name: option.choices for option in OPTIONS if option.choices}
    assert offered["patch_metric"] == ("model", "float32") and offered["isolation"] == ("strong", "weak")
    assert all(type(choice) is str for choices in offered.values() for choice in choices)
