"""The chain task on one hand-built problem, every expected string and label written out."""

from __future__ import annotations

import pytest

from reasonrl.tasks.chain import TASK, build

# c = 4, a = c + 3 = 0, b = a * 5 = 0, d = b - 2 = 5 (mod 7); asked: b (k = 2)
P = build("cabd", 4, [("+", 3), ("*", 5), ("-", 2)], k=2)


def test_prompt_trace_answer_and_budget():
    assert P.prompt == "c=4,a=c+3,b=a*5,d=b-2?b="
    assert P.values == (4, 0, 0, 5)
    assert P.trace == "c4a+30b*50"
    assert P.target("cot") == "c4a+30b*50|0$" and P.target("direct") == "|0$"
    assert P.budget == 4 * 2 + 9  # root 2, `|0$` 3, one step too many 4
    assert P.key == "cabd:4:+3*5-2:2"
    assert TASK.longest({"n_range": (4, 4)}, "cot") == 3 + 15 + 3 + 3 + (2 + 12 + 3)


def test_step_labels_judge_each_character():
    assert P.step_labels("c4a+30b*50") == [True] * 10
    #                      root  name op const value | name op const value
    assert P.step_labels("c4a+31b*50") == [True, True, True, True, True, False, True, True, True, True]
    assert P.step_labels("c4a-30d-25") == [True, True, True, False, True, True, False, True, True, True]
    assert P.step_labels("b4") == [False, False]


@pytest.mark.parametrize("response, outcome", [
    ("c4a+30b*50|0$", "correct"),
    ("|0$", "correct"),
    ("c4a+30b*50|3$", "miscopy"),
    ("c4a+31b*53|3$", "arith"),  # every lookup right, a value wrong
    ("c4a*30b*50|3$", "lookup"),  # a's operation misread
    ("c4d-25|5$", "lookup"),  # the wrong definition read
    ("c4a+30|0$", "correct"),  # a right answer is right whatever the trace
    ("c4a+30|3$", "early"),
    ("c4a+30b*50d-25|5$", "overshoot"),
    ("c4a+30b*50", "malformed"),
])
def test_classify_names_the_first_kind_of_failure(response, outcome):
    assert P.classify(response) == outcome


def test_format_patterns():
    assert TASK.thinks("c4a+30|0$") and not TASK.thinks("|0$") and not TASK.thinks("c4|0$")
    assert TASK.well_formed("c4a+30b*50|0$")
    assert not TASK.well_formed("c4a+30b*50|0$$") and not TASK.well_formed("c4a+70|0$")
