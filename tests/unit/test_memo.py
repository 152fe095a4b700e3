"""``flows[].memoize`` (``jobflow_core.flows.memo``): the cache key, reuse of a recent Completed run, what is stored."""

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from jobflow_core import WriteStatus, plan
from jobflow_core.flows.memo import MAX_ENTRIES, Entry, entries_of, spec_key, with_entry
from jobflow_core.flows.vcjobs import build_job
from jobflow_core.models import VcJobPhase
from jobflow_core.planning.planner import Memoize
from jobflow_core.validation.jobflows import validate
from jobflow_core.vocabulary.api import MEMO_KEY
from jobflow_core.vocabulary.naming import attempt_job_name
from scenario import T0, TEMPLATE_SPEC, jobflow, template, templates_for, vcjob

pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")
"""cel-python raises the recursion limit when it makes its first CEL environment (memoize.key)."""

PIPELINE = """
metadata: {name: NAME}
spec:
  parameters: [{name: day, value: "DAY"}]
  flows:
  - name: prepare
    memoize: {maxAge: 1h}
    patch: {jobSpec: {tasks: [{name: nginx, template: {spec: {containers: [{name: nginx, args: ["{{params.day}}"]}]}}}]}}
  - name: train
    dependsOn: {targets: [prepare]}
    patch: {jobSpec: {tasks: [{name: nginx, template: {spec: {containers: [
      {name: nginx, args: ["{{targets.prepare.result}}"]}]}}}]}}
"""


def pipeline(name: str = "run1", day: str = "2026-11-25", namespace: str = "default"):
    flow = jobflow(PIPELINE.replace("NAME", name).replace("DAY", day))
    return flow.model_copy(update={"metadata": flow.metadata.model_copy(update={"namespace": namespace})})


def first_key(flow) -> str:
    [create] = plan(flow, templates=templates_for(flow), jobs=[], now=T0).creates
    return create.manifest["metadata"]["annotations"][MEMO_KEY]


def test_a_memoized_flows_vcjob_carries_its_key_and_is_stored_once_it_completed_with_its_result():
    flow = pipeline()
    key = first_key(flow)
    job = vcjob(flow, "prepare", VcJobPhase.COMPLETED, changed=T0 + timedelta(seconds=5))
    job = job.model_copy(update={"metadata": job.metadata.model_copy(update={"annotations": {MEMO_KEY: key}})})
    flow = flow.model_copy(update={"status": jobflow("{}", status={"jobStatusList": [
        {"name": "run1-prepare", "state": "Running"}]}).status})
    unread = plan(flow, templates=templates_for(flow), jobs=[job], now=T0 + timedelta(seconds=6))
    assert not unread.of(Memoize)  # the result is read first
    from jobflow_core import observe
    observation = observe(flow, jobs=[job], now=T0 + timedelta(seconds=6))
    assert "run1-prepare" in observation.results_needed()
    from jobflow_core import plan_observation
    result = plan_observation(observation.with_answers(results={"run1-prepare": "s3://b/x"}),
                              templates=templates_for(flow))
    [memoize] = result.of(Memoize)
    assert memoize.key == key and memoize.entry == Entry("default/run1-prepare", T0 + timedelta(seconds=5), "s3://b/x")
    kinds = [type(action).__name__ for action in result.actions]
    assert kinds.index("Memoize") < kinds.index("WriteStatus")


def test_a_second_run_reuses_the_first_creates_no_vcjob_for_it_and_its_dependent_gets_the_same_value():
    first = pipeline("run1")
    memo = {first_key(first): Entry("default/run1-prepare", T0 - timedelta(minutes=30), "s3://b/x")}
    second = pipeline("run2")
    result = plan(second, templates=templates_for(second), jobs=[], now=T0, memo=memo)
    assert [c.job_name for c in result.creates] == ["run2-train"]
    [create] = result.creates
    assert create.manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["args"] == ["s3://b/x"]
    [record] = [r for r in result.status.job_status_list if r.name == "run2-prepare"]
    assert (record.state, record.reason, record.cached_from, record.result) == \
        (VcJobPhase.COMPLETED, "Cached", "default/run1-prepare", "s3://b/x")
    [write] = result.of(WriteStatus)
    assert [e.reason for e in write.events][0] == "Cached"
    assert write.events[0].message.startswith('flow "prepare" not run: it reuses the run of vcjob default/run1-prepare')


def test_a_changed_parameter_an_old_run_or_another_namespace_runs_it_again():
    first = pipeline("run1")
    memo = {first_key(first): Entry("default/run1-prepare", T0 - timedelta(minutes=30), "s3://b/x")}
    for other, now in ((pipeline("run2", day="2026-11-26"), T0), (pipeline("run2"), T0 + timedelta(hours=1)),
                       (pipeline("run2", namespace="team-b"), T0)):
        result = plan(other, templates=templates_for(other), jobs=[], now=now, memo=memo)
        assert [c.job_name for c in result.creates] == ["run2-prepare"]


VALUES = st.text(alphabet="abc019-_.:/ ", min_size=1, max_size=12)
"""Parameter values as a user writes them in YAML (any string reaches the key the same way)."""

RESULTS = st.text(st.characters(blacklist_categories=("Cc", "Cs")) | st.sampled_from("\n\t"), max_size=16)
"""A target's result as its pod writes it: any text, quotes, braces and newlines included (control characters
other than tab and newline are dropped before they reach a spec, so they are not drawn)."""


@dataclass(frozen=True)
class Inputs:
    """What the memoized flow's rendered vcjob spec is made of: its JobTemplate, its patch, a parameter its patch
    reads, and its target's result."""

    image: str
    command: str
    replicas: int
    env: str
    day: str
    result: str


@dataclass(frozen=True)
class Identity:
    """What differs from one run of the same work to the next: none of it may reach the key."""

    name: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    owners: list[dict[str, Any]]
    attempt: int


INPUTS = st.builds(Inputs, image=st.sampled_from(["nginx:1.27", "nginx:1.28", "busybox:1.36"]), command=VALUES,
                   replicas=st.integers(min_value=1, max_value=3), env=VALUES, day=VALUES, result=RESULTS)
WORDS = st.text(alphabet="abcxyz019", min_size=1, max_size=6)
IDENTITIES = st.builds(
    Identity, name=st.builds("run-{}".format, WORDS), uid=st.uuids().map(str),
    labels=st.dictionaries(st.builds("example.com/{}".format, WORDS), WORDS, max_size=3),
    annotations=st.dictionaries(st.builds("example.com/{}".format, WORDS), VALUES, max_size=3),
    owners=st.lists(st.builds(lambda name, uid: {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlowTemplate",
                                                 "name": name, "uid": str(uid), "controller": True},
                              WORDS, st.uuids()), max_size=1),
    attempt=st.integers(min_value=1, max_value=3))

def train_key(inputs: Inputs, identity: Identity, *, memoize: dict[str, Any]) -> str:
    """The key of memoized flow ``train`` about to start its attempt ``identity.attempt``: ``prepare`` Completed
    with ``inputs.result``, ``train``'s earlier attempts Failed (it retries)."""
    name = identity.name
    records = [{"name": f"{name}-prepare", "state": "Completed", "result": inputs.result}]
    records += [{"name": attempt_job_name(jobflow=name, flow="train", attempt=n), "state": "Failed"}
                for n in range(1, identity.attempt)]
    container = {"name": "nginx", "args": ["{{params.day}}", "{{targets.prepare.result}}"],
                 "env": [{"name": "MODE", "value": inputs.env}]}
    flow = jobflow(yaml.safe_dump({
        "metadata": {"name": name, "uid": identity.uid, "labels": identity.labels,
                     "annotations": identity.annotations, "ownerReferences": identity.owners},
        "spec": {"parameters": [{"name": "day", "value": inputs.day}], "flows": [
            {"name": "prepare"},
            {"name": "train", "dependsOn": {"targets": ["prepare"]}, "memoize": memoize,
             "retry": {"limit": 5, "backoff": {"delaySeconds": 0}},
             "patch": {"jobSpec": {"tasks": [{"name": "nginx", "template": {"spec": {"containers": [container]}}}]}}},
        ]}}), status={"jobStatusList": records})
    spec = yaml.safe_load(TEMPLATE_SPEC)
    pod = spec["tasks"][0]
    pod["replicas"] = inputs.replicas
    pod["template"]["spec"]["containers"][0] |= {"image": inputs.image, "command": ["sh", "-c", inputs.command]}
    templates = {"prepare": template("prepare"), "train": template("train", spec=yaml.safe_dump(spec))}
    [create] = plan(flow, templates=templates, jobs=[], now=T0).creates
    assert create.job_name == attempt_job_name(jobflow=name, flow="train", attempt=identity.attempt)
    return create.manifest["metadata"]["annotations"][MEMO_KEY]


@settings(deadline=None, max_examples=150)  # each example plans twice; a shared 2-core machine makes that slow
@given(INPUTS, INPUTS, IDENTITIES, IDENTITIES, st.booleans())
def test_the_key_changes_exactly_when_the_rendered_spec_changes_never_with_the_jobflows_identity(
        one, two, first, second, same_inputs):
    two = one if same_inputs else two  # half the examples: the same work, run by two different JobFlows
    keys = [train_key(inputs, identity, memoize={}) for inputs, identity in ((one, first), (two, second))]
    assert (keys[0] == keys[1]) == (one == two)


POD_METADATA = st.sampled_from([None, {}, {"annotations": {}}, {"labels": {"app": "etl"}},
                                 {"annotations": {"example.com/owner": "data"}}])
"""The pod template's metadata as a JobTemplate may have it: the engine adds its attempt annotation there."""


@given(POD_METADATA, st.booleans(), st.integers(min_value=1, max_value=4), st.integers(min_value=1, max_value=4))
def test_the_attempt_never_reaches_the_key_whatever_the_templates_pod_metadata(metadata, retry, one, two):
    """Without ``retry`` only attempts after the first (a rerun's) carry the attempt annotation: a rerun must still
    hit what the first attempt stored."""
    spec = yaml.safe_load(TEMPLATE_SPEC)
    if metadata is not None:
        spec["tasks"][0]["template"]["metadata"] = metadata
    flow = jobflow(yaml.safe_dump({"spec": {"flows": [{"name": "a", "memoize": {}}
                                                      | ({"retry": {"limit": 3}} if retry else {})]}}))
    job_template = template("a", spec=yaml.safe_dump(spec))
    keys = {spec_key(namespace="default", spec=build_job(flow, flow="a", template=job_template, attempt=n)["spec"])
            for n in (one, two)}
    assert len(keys) == 1


@settings(deadline=None, max_examples=60)
@given(INPUTS, INPUTS, IDENTITIES, IDENTITIES, st.booleans())
def test_one_change_to_the_template_the_patch_a_parameter_or_a_targets_result_changes_the_key(
        inputs, other, first, second, same_identity):
    second = first if same_identity else second
    base = train_key(inputs, first, memoize={})
    for field in ("image", "command", "replicas", "env", "day", "result"):
        changed = replace(inputs, **{field: getattr(other, field)})
        assert (train_key(changed, second, memoize={}) == base) == (changed == inputs), field


@settings(deadline=None, max_examples=60)  # the first example loads the CEL implementation
@given(st.sampled_from(["params.day", "[params.day, targets.prepare.resultText]"]), INPUTS, INPUTS, IDENTITIES,
       IDENTITIES)
def test_a_declared_key_changes_exactly_when_its_inputs_do(expression, one, two, first, second):
    keys = [train_key(inputs, identity, memoize={"key": expression})
            for inputs, identity in ((one, first), (two, second))]
    read = (lambda i: i.day) if "targets" not in expression else (lambda i: (i.day, i.result))
    assert (keys[0] == keys[1]) == (read(one) == read(two))


@settings(deadline=None)
@given(st.integers(min_value=0, max_value=7200), st.sampled_from(["default", "team-b"]))
def test_a_run_is_reused_only_within_its_max_age_and_only_in_its_own_namespace(age, namespace):
    memo = {first_key(pipeline("run1")): Entry("default/run1-prepare", T0, "s3://b/x")}  # stored in "default"
    other = pipeline("run2", namespace=namespace)
    result = plan(other, templates=templates_for(other), jobs=[], now=T0 + timedelta(seconds=age), memo=memo)
    reused = "run2-prepare" not in [c.job_name for c in result.creates]
    assert reused == (namespace == "default" and age <= 3600)  # maxAge: 1h


def test_the_cache_stays_bounded_dropping_the_oldest_and_keeps_a_4kib_result():
    data: dict = {}
    for i in range(MAX_ENTRIES + 5):
        data = with_entry(data, f"k{i:04d}", Entry(f"ns/j{i}", T0 + timedelta(seconds=i), "x" * 5000))
    entries = entries_of(data)
    assert len(entries) == MAX_ENTRIES and "k0000" not in entries and "k0204" in entries
    assert len(entries["k0204"].result) == 4096
    assert entries_of({"bad": "not json", **data}) == entries  # someone's edit is not used


def test_admission_refuses_memoize_on_a_fan_out_a_key_that_is_not_cel_and_a_bad_max_age():
    errors = [str(e) for e in validate(jobflow(
        "spec: {flows: [{name: a, forEach: {items: [1]}, memoize: {}}, {name: b, memoize: {key: 'a +', "
        "maxAge: 1d}}]}"))]
    assert errors[0].startswith('flow "a": memoize on a forEach flow')
    assert errors[1].startswith('flow "b": memoize.key is a CEL syntax error')
    assert errors[2].startswith('flow "b": memoize.maxAge \'1d\' is not a duration')


def test_what_rests_on_a_reuse_is_created_only_after_the_status_write_that_records_it():
    from jobflow_core import observe, plan_observation

    memo = {first_key(pipeline("run1")): Entry("default/run1-prepare", T0, "s3://b/x")}
    second = pipeline("run2")
    result = plan_observation(observe(second, jobs=[], now=T0), templates=templates_for(second), memo=memo)
    kinds = [type(action).__name__ for action in result.actions]
    assert kinds.index("WriteStatus") < kinds.index("Create")


def test_a_rerun_of_a_failed_jobflow_reuses_the_memoized_run_and_runs_what_follows():
    from jobflow_core.models import JobFlowPhase
    from scenario import Cluster

    cluster = Cluster(jobflow("spec: {flows: [{name: prepare, memoize: {}}, "
                              "{name: train, dependsOn: {targets: [prepare]}}]}"))
    [create] = cluster.step().creates
    key = create.manifest["metadata"]["annotations"][MEMO_KEY]
    cluster.move("prepare", VcJobPhase.COMPLETED)
    cluster.step()
    cluster.move("train", VcJobPhase.FAILED)
    cluster.step()
    assert cluster.phase is JobFlowPhase.FAILED
    memo = {key: Entry("default/test-prepare", cluster.now, "")}
    annotations = {"flow.volcano.sh/rerun": "1", "flow.volcano.sh/rerun-flows": "prepare"}
    cluster.flow = cluster.flow.model_copy(update={"metadata": cluster.flow.metadata.model_copy(
        update={"annotations": annotations})})
    result = plan(cluster.flow, templates=cluster.templates, jobs=list(cluster.jobs.values()), now=cluster.now,
                  memo=memo)
    assert [c.job_name for c in result.creates] == ["test-train-r1"]  # prepare's second attempt: reused
    [record] = [r for r in result.status.job_status_list if r.name == "test-prepare-r1"]
    assert (record.reason, record.cached_from) == ("Cached", "default/test-prepare")
