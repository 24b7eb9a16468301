"""layers.py: who leads after each layer and from which layer the final leader stays ahead, on hand-made
sequences."""

from __future__ import annotations

import pytest

from pytest_gotchas.report.wording import lead_text
from pytest_gotchas.results.layers import Stretch, lead, leader
from pytest_gotchas.results.vocabulary import Leader


def test_leader_is_strict_and_an_exact_tie_is_nobodys() -> None:
    assert leader(0.6, 0.3) == Leader.CORRECT
    assert leader(0.3, 0.6) == Leader.WRONG
    assert leader(0.25, 0.25) == Leader.TIE
    assert leader(0.0, 0.0) == Leader.TIE


def test_decided_early_and_never_lost() -> None:
    story = lead([(0.5, 0.1)] * 18)
    assert (story.final, story.decided_at, story.changed_hands, story.last_layer) == (Leader.CORRECT, 1, False, 18)
    assert lead_text(story) == "decided at layer 1 of 18 (correct)"


def test_decided_late_without_the_other_side_ever_ahead() -> None:
    readings = [(0.1, 0.1)] * 11 + [(0.2, 0.1)] * 7  # tied (say both 0) up to layer 11
    story = lead(readings)
    assert (story.final, story.decided_at, story.changed_hands) == (Leader.CORRECT, 12, False)
    assert story.stretches == (Stretch(Leader.TIE, 1, 11), Stretch(Leader.CORRECT, 12, 18))
    assert lead_text(story) == "decided at layer 12 of 18 (correct); before: tied at layers 1-11"


def test_lead_changed_hands() -> None:
    story = lead([(0.4, 0.2)] * 13 + [(0.2, 0.4)] * 5)
    assert (story.final, story.decided_at, story.changed_hands) == (Leader.WRONG, 14, True)
    assert lead_text(story) == "correct ahead at layers 1-13, then wrong from layer 14 of 18"


def test_a_tie_interrupts_a_lead() -> None:
    """The final leader stays ahead only from after the last tie: a tie is nobody's lead, not the leader's."""
    story = lead([(0.3, 0.2), (0.3, 0.2), (0.25, 0.25), (0.3, 0.2)])
    assert (story.final, story.decided_at, story.changed_hands) == (Leader.CORRECT, 4, False)
    assert lead_text(story) == "decided at layer 4 of 4 (correct); before: correct ahead at layers 1-2, tied at layer 3"


def test_several_changes_of_hands() -> None:
    story = lead([(0.1, 0.2), (0.3, 0.2), (0.3, 0.2), (0.2, 0.2), (0.1, 0.2), (0.3, 0.1)])
    assert (story.final, story.decided_at, story.changed_hands) == (Leader.CORRECT, 6, True)
    assert lead_text(story) == ("wrong ahead at layer 1, correct ahead at layers 2-3, tied at layer 4, "
                            "wrong ahead at layer 5, then correct from layer 6 of 6")


def test_a_final_tie_is_decided_nowhere() -> None:
    story = lead([(0.3, 0.2), (0.2, 0.2)])
    assert (story.final, story.decided_at, story.changed_hands) == (Leader.TIE, None, False)
    assert lead_text(story) == "tied after the last layer (2); before: correct ahead at layer 1"
    assert lead_text(lead([(0.0, 0.0)])) == "tied after the last layer (1)"


def test_layers_may_start_at_the_embeddings() -> None:
    story = lead([(0.1, 0.1), (0.2, 0.1), (0.1, 0.2)], first_layer=0)
    assert story.stretches == (Stretch(Leader.TIE, 0, 0), Stretch(Leader.CORRECT, 1, 1), Stretch(Leader.WRONG, 2, 2))
    assert (story.decided_at, story.changed_hands) == (2, True)


def test_lead_needs_a_layer() -> None:
    with pytest.raises(ValueError):
        lead([])


def test_a_layer_closer_than_the_effect_floor_leads_nobody() -> None:
    """The lens's verdict layer is one the floor lets count: layers whose two probabilities are a step or two of
    bfloat16 apart (marked under_floor by scoring) are nobody's lead, as an exact tie is."""
    readings = [(0.2, 0.1)] * 3 + [(0.4023, 0.3984)] * 2 + [(0.5, 0.1)] * 3
    under = [False] * 3 + [True] * 2 + [False] * 3
    assert lead(readings).decided_at == 1  # without the floor: ahead from the start
    story = lead(readings, under=under)
    assert story.stretches == (Stretch(Leader.CORRECT, 1, 3), Stretch(Leader.FLOOR, 4, 5),
                               Stretch(Leader.CORRECT, 6, 8))
    assert (story.final, story.decided_at) == (Leader.CORRECT, 6)
    assert lead_text(story) == ("decided at layer 6 of 8 (correct); before: correct ahead at layers 1-3, within the "
                                "effect floor at layers 4-5")
    last = lead([(0.5, 0.1), (0.4023, 0.3984)], under=[False, True])
    assert (last.final, last.decided_at) == (Leader.FLOOR, None)
    assert lead_text(last) == ("within the effect floor after the last layer (2): no lead to place; before: correct "
                               "ahead at layer 1")
