"""The planner against its old self (``planner_oracle.py``): the same Plan for every generated observation.

Issue 41 reshapes how the planner asks its questions (queueing once, a memo hit as records added before the start
table runs again, not a second planning pass), not what it answers. So for random JobFlows (random DAGs and graphs
with cycles, random vcjobs and records: ``test_planner_properties.worlds``), for JobFlows waiting in a full queue
or admitted to one, and for runs that reuse memoized runs (one hit, or a chain of two, or none when too old), the
new planner's Plan (every action, the status, every decision) equals the old one's.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from planner_oracle import old_plan_observation
from scenario import T0, jobflow, templates_for
from test_memo import first_key, pipeline
from test_planner_properties import any_worlds
from test_queueing import chain, queue, stage_templates, started, waiting

from jobflow_core import observe, plan_observation
from jobflow_core.flows.memo import Entry
from jobflow_core.queueing.line import PRIORITY_CLASS

pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")


def both(observation, **given):
    return plan_observation(observation, **given), old_plan_observation(observation, **given)


@settings(max_examples=300, deadline=None)
@given(any_worlds)
def test_random_jobflows_get_the_old_planners_plan(world):
    new, old = both(observe(world.flow, jobs=world.jobs, now=T0), templates=world.templates)
    assert new == old


CHAIN = """
metadata: {name: NAME}
spec:
  flows:
  - {name: prepare, memoize: {maxAge: 1h}}
  - {name: clean, memoize: {maxAge: 1h}, dependsOn: {targets: [prepare]}}
  - {name: train, dependsOn: {targets: [clean]}}
"""


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["2026-11-25", "2026-11-26"]), st.integers(0, 90), st.booleans())
def test_runs_that_reuse_memoized_runs_get_the_old_planners_plan(day, minutes_ago, notify):
    first = pipeline("run1")
    memo = {first_key(first): Entry("default/run1-prepare", T0 - timedelta(minutes=minutes_ago), "s3://b/x")}
    second = pipeline("run2", day=day)
    new, old = both(observe(second, jobs=[], now=T0), templates=templates_for(second), memo=memo, notify=notify)
    assert new == old


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 90), st.integers(0, 90))
def test_a_chain_of_memo_hits_gets_the_old_planners_plan(prepare_age, clean_age):
    runs = [jobflow(CHAIN.replace("NAME", name)) for name in ("run1", "run2")]
    keys = [plan_observation(observe(runs[0], jobs=[], now=T0), templates=templates_for(runs[0])).creates[0]]
    memo = {keys[0].manifest["metadata"]["annotations"]["flow.volcano.sh/memo-key"]:
            Entry("default/run1-prepare", T0 - timedelta(minutes=prepare_age), "s3://b/x")}
    # The second step's key exists once the first is reused: plan with the first hit, read the key it gives.
    hit = plan_observation(observe(runs[1], jobs=[], now=T0), templates=templates_for(runs[1]), memo=memo)
    for create in hit.creates:
        key = create.manifest["metadata"].get("annotations", {}).get("flow.volcano.sh/memo-key")
        if key:
            memo[key] = Entry("default/run1-clean", T0 - timedelta(minutes=clean_age), "s3://b/y")
    new, old = both(observe(runs[1], jobs=[], now=T0), templates=templates_for(runs[1]), memo=memo)
    assert new == old


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([None, "Completed", "Running"]), st.lists(st.tuples(st.booleans(), st.sampled_from([2, 8, 16])),
                                                                 max_size=4),
       st.sampled_from([None, {"cpu": 8000}, {"cpu": 32000}]), st.booleans(), st.booleans())
def test_jobflows_in_a_queue_get_the_old_planners_plan(a_was, line, capacity, priority, written_before):
    flow = chain(status={"jobStatusList": [{"name": "test-a", "state": a_was}]} if a_was else None)
    ahead = [started(f"s{n}", cpu) if began else waiting(f"w{n}", cpu=cpu) for n, (began, cpu) in enumerate(line)]
    queues = queue(capacity, *ahead, priority=PRIORITY_CLASS if priority else None)
    if written_before:  # the status this planner wrote last time: what events are said against
        flow = flow.model_copy(update={"status": plan_observation(observe(flow, jobs=[], now=T0),
                                                                  templates=stage_templates(), queues=queues).status})
    new, old = both(observe(flow, jobs=[], now=T0), templates=stage_templates(), queues=queues)
    assert new == old
