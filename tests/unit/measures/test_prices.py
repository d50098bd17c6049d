"""What each measure's phase costs a launch, in `evalharness plan` (measures/<key>/price.py via measures/prices.py):
the plan of a two-stage matrix prices every enabled check in exploration and names the figure a check lacks."""

import pytest

from evalharness.analysis.plan import make_plan
from evalharness.render.plan import plan_text
from tests.unit.analysis.test_plan_two_stage import TWO_STAGE

CHECKS = {"batching": {"enabled": True, "count": 16, "max_tokens": 32, "concurrency": 8, "tasks": ["a"],
                       "task_documents": 30},
          "prefix_cache": {"enabled": True, "count": 8, "max_tokens": 16},
          "calls_modes": {"enabled": True, "tasks": ["eh_json"], "cases": 8, "concurrency": 8, "max_tokens": 48}}


def test_a_plan_prices_each_enabled_check_a_launch_of_exploration():
    """Failed before issue 60's pricing: only batching was priced; the demo's prefix-cache and calls checks were not,
    so its estimate was short by about 3 minutes."""
    plan = make_plan({**TWO_STAGE, **CHECKS}, cells=4, tok_s=400.0, startup_min=5, answer_tokens={"a": 200, "b": 800})
    sp = plan.stages
    stream = 400.0 / 4  # one of the quality phase's 4 streams
    batching = 16 * 32 / stream + 3 * 16 * 32 / 400.0 + 30 * 200 / stream  # load 8 > 4: the box's 400 tok/s at most
    prefix = 2 * 8 * 16 / stream
    calls = 2 * 8 * 48 / stream + 2 * 8 * 48 / 400.0
    assert {title: figure.value for title, figure in sp.measures.items()} == pytest.approx(
        {"batch dependence": batching, "prefix cache": prefix, "calls under load and streamed": calls})
    assert all(figure.bound for figure in sp.measures.values())
    assert sp.exploration.measures_h == pytest.approx(4 * (batching + prefix + calls) / 3600)
    assert sp.confirmation.measures_h == 0.0  # a confirming launch runs no check
    text = plan_text(plan)
    assert f"- the prefix cache check, a launch: {prefix / 60:,.1f} min (at most: 8 prompts x 16 tokens" in text
    assert "checks " in text.split("- exploration:")[1].splitlines()[0]


def test_a_check_the_plan_cannot_price_is_named_among_what_exploration_lacks():
    plan = make_plan({**TWO_STAGE, **CHECKS}, cells=4, startup_min=5, answer_tokens={"a": 200, "b": 800})
    lacks = plan.stages.exploration.lacks
    assert "the prefix cache check's time (needs the quality phase's tok/s)" in lacks
    assert plan.stages.exploration.hours is None


def test_a_check_left_off_costs_nothing():
    plan = make_plan(TWO_STAGE, cells=4, tok_s=400.0, startup_min=5, answer_tokens={"a": 200, "b": 800})
    assert plan.stages.measures == {} and plan.stages.exploration.measures_h == 0.0
