"""Regrading sees a stored multi-turn trajectory as grading saw it: texts and turn markers."""

from __future__ import annotations

import turns_episode as two

from gym._run._regrade import trajectory_of
from gym._store import TurnsRow


def test_each_step_gets_its_message_text_and_its_turn_markers():
    _, steps, _, turns = two.rows()
    trajectory = trajectory_of(steps, two.MESSAGES, turns)
    assert [s.content for s in trajectory] == [
        "Searching both.",
        "Searching both.",  # the second call of the same message
        "Two found.",
        "Cancelling.",
        "Done.",
    ]
    assert [(s.turn, s.turn_end, s.user) for s in trajectory] == [
        (0, False, None),
        (0, False, None),
        (0, True, two.USER),
        (1, False, None),
        (1, True, None),
    ]
    live = two.result().steps  # what grading saw when the episode ran
    assert [(s.turn, s.turn_end, s.user) for s in live] == [
        (s.turn, s.turn_end, s.user) for s in trajectory
    ]


def test_an_episode_stored_without_turns_is_one_turn():
    _, steps, _, _ = two.rows()
    trajectory = trajectory_of(steps, two.MESSAGES, TurnsRow.empty("e0turns"))
    assert {(s.turn, s.turn_end, s.user) for s in trajectory} == {(0, False, None)}
    default = trajectory_of(steps, two.MESSAGES)
    assert [s.model_dump(exclude={"started_at"}) for s in default] == [
        s.model_dump(exclude={"started_at"}) for s in trajectory
    ]
