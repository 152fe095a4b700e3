"""Admission looks down the tree of child JobFlows (``jobflow_core.validation.nesting``): cycles of JobFlowTemplates,
depth, undeclared parameters, names that collide across levels or grow too long; and the webhook and
``kubectl jobflow validate`` do it with the namespace's JobFlowTemplates.
"""

from __future__ import annotations

import io
from itertools import product

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from jobflow_core.models import Flow, JobFlow, JobFlowTemplate
from jobflow_core.validation import nesting
from jobflow_core.validation.nesting import Wild, common_name, jobflow_nesting, name_pattern, template_nesting
from jobflow_core.validation.review import JOBFLOW, JOBFLOWTEMPLATE, decide
from jobflow_core.vocabulary.naming import attempt_job_name

# The token DP against brute force ---------------------------------------------------------------------------------

LITERALS = ["a", "b", "0", "1", "2", "01", "r1", "r2", "r0", "r"]
"""Tokens that meet an index (0..2), an attempt (r1, r2), or nothing: with indexes 0..2 and attempts r1..r2 the
brute force below sees every way two patterns can meet."""
INDEXES = range(3)
ATTEMPTS = range(1, 4)  # the first attempt (no -r<k>), then r1 and r2

tokens = st.sampled_from([*LITERALS, Wild.INDEX, Wild.ATTEMPT])
patterns = st.lists(tokens, min_size=1, max_size=6).map(tuple)


def spellings(pattern: tuple) -> set[str]:
    """Every name ``pattern`` spells with small indexes and attempts."""
    choices = [[token] if isinstance(token, str) else [str(i) for i in INDEXES] if token is Wild.INDEX
               else [None, *(f"r{k}" for k in range(1, 3))] for token in pattern]
    return {"-".join(t for t in chosen if t is not None) for chosen in product(*choices)}


@settings(max_examples=1000)
@given(patterns, patterns)
def test_two_patterns_meet_exactly_when_some_indexes_and_attempts_spell_both(a, b):
    common = spellings(a) & spellings(b)
    found = common_name(a, b)
    assert (found is not None) == bool(common)
    assert found is None or found in common
    assert (common_name(b, a) is None) == (found is None)


flow_names = st.lists(st.sampled_from(LITERALS[:-1]), min_size=1, max_size=3).map("-".join)
levels = st.lists(st.tuples(flow_names, st.booleans()), min_size=1, max_size=3)
"""A path down the tree: each level a flow name (with '-' inside) and whether it fans out (forEach)."""


def flow(name: str, fanned: bool) -> Flow:
    return Flow.model_validate({"name": name, **({"forEach": {"items": [1, 2, 3]}} if fanned else {})})


def names_down(path: list[tuple[str, bool]], root: str = "p") -> set[str]:
    """Every name the last flow of ``path`` makes, by the engine's own naming function, level after level."""
    names = {root}
    for name, fanned in path:
        names = {attempt_job_name(jobflow=parent, flow=name, attempt=attempt, index=index)
                 for parent in names for attempt in ATTEMPTS for index in (INDEXES if fanned else [None])}
    return names


def pattern_down(path: list[tuple[str, bool]]) -> tuple:
    pattern: tuple = ()
    for name, fanned in path:
        pattern = name_pattern(flow(name, fanned), under=pattern)
    return pattern


@settings(max_examples=500)
@given(levels, levels)
def test_the_patterns_of_flows_down_the_tree_meet_exactly_when_the_engines_names_do(one, other):
    common = names_down(one) & names_down(other)
    found = common_name(pattern_down(one), pattern_down(other))
    assert (found is not None) == bool(common)
    assert found is None or f"p-{found}" in common


sites = st.lists(st.tuples(st.sampled_from([(), ("x",), ("x", "y"), ("z",)]), patterns), max_size=12)
"""Flows of a tree: each under a parent (the flows down to it) and with its names."""


@given(sites)
def test_the_tree_compares_every_pair_of_flows_of_different_jobflows_that_could_meet(drawn):
    made = [nesting.Site(nesting.Place((*parent, f"f{i}"), (None,) * (len(parent) + 1)), pattern)
            for i, (parent, pattern) in enumerate(drawn)]
    every_pair = [(one, other) for i, one in enumerate(made) for other in made[i + 1:]
                  if one.place.parent != other.place.parent and common_name(one.pattern, other.pattern) is not None]
    found, whole = nesting.collisions(made, root="p")
    assert whole and len(found) == len(every_pair)


def test_an_item_always_has_its_index_so_it_never_takes_the_bare_flow_name():
    assert common_name(pattern_down([("a", True), ("b", False)]), pattern_down([("a-b", False)])) is None
    assert common_name(pattern_down([("a", True), ("b", False)]), pattern_down([("a-0-b", False)])) == "a-0-b"


# Objects ---------------------------------------------------------------------------------------------------------


def template(name: str, flows: str, parameters: str = "[]") -> JobFlowTemplate:
    return JobFlowTemplate.model_validate(yaml.safe_load(f"""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {{name: {name}, namespace: default}}
spec:
  jobFlow:
    spec:
      parameters: {parameters}
      flows: {flows}
"""))


def jobflow(flows: str, name: str = "p") -> JobFlow:
    return JobFlow.model_validate(yaml.safe_load(f"""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {{name: {name}, namespace: default}}
spec:
  flows: {flows}
"""))


def by_name(*templates: JobFlowTemplate) -> dict[str, JobFlowTemplate]:
    return {t.name: t for t in templates}


def errors_of(found: nesting.Nesting) -> list[str]:
    return [str(error) for error in found.errors]


CYCLE_HINT = ("a child JobFlow would make the same child again, level after level: remove one of these flows, or make "
              "it run another JobFlowTemplate")
RENAME_HINT = ("rename one of the two flows: a flow's vcjobs and child JobFlows are named <jobflow>-<flow>, then "
               "-<index> for an item or iteration, -r<k> for a retry or rerun, and a child JobFlow's under its own "
               "name")

# Cycles ----------------------------------------------------------------------------------------------------------


def test_a_template_that_includes_itself_directly_is_refused():
    loop = template("a", "[{name: x, jobFlow: {template: a}}]")
    assert errors_of(template_nesting(loop, templates={})) == [
        f'JobFlowTemplate "a" includes itself: a -> a (flow "x" of a) ({CYCLE_HINT})']


def test_a_template_that_includes_itself_through_another_is_refused_with_the_chain():
    a = template("a", "[{name: x, jobFlow: {template: b}}]")
    b = template("b", "[{name: w}, {name: y, jobFlow: {template: a}}]")
    assert errors_of(template_nesting(a, templates=by_name(a, b))) == [
        f'JobFlowTemplate "a" includes itself: a -> b -> a (flow "x" of a, flow "y" of b) ({CYCLE_HINT})']


def test_an_update_that_closes_a_cycle_is_checked_with_itself_in_place_of_the_stored_version():
    stored_a = template("a", "[{name: x}]")
    b = template("b", "[{name: y, jobFlow: {template: a}}]")
    assert errors_of(template_nesting(b, templates=by_name(stored_a, b))) == []
    updated_a = template("a", "[{name: x, jobFlow: {template: b}}]")
    assert errors_of(template_nesting(updated_a, templates=by_name(stored_a, b))) == [
        f'JobFlowTemplate "a" includes itself: a -> b -> a (flow "x" of a, flow "y" of b) ({CYCLE_HINT})']


def test_a_jobflow_whose_child_templates_cycle_is_refused_once_per_cycle():
    a = template("a", "[{name: x, jobFlow: {template: b}}]")
    b = template("b", "[{name: y, jobFlow: {template: a}}]")
    found = jobflow_nesting(jobflow("[{name: c, jobFlow: {template: a}}, {name: d, jobFlow: {template: b}}]"),
                            templates=by_name(a, b))
    assert errors_of(found) == [
        f'JobFlowTemplate "a" includes itself: a -> b -> a (flow "x" of a, flow "y" of b) ({CYCLE_HINT})']


# Depth, parameters, missing templates ----------------------------------------------------------------------------


def test_a_nesting_deeper_than_max_depth_is_refused_where_it_goes_too_deep():
    chain = [template(f"t{i}", f"[{{name: f, jobFlow: {{template: t{i + 1}}}}}]") for i in range(6)]
    found = jobflow_nesting(jobflow("[{name: c, jobFlow: {template: t0}}]"), templates=by_name(*chain))
    assert errors_of(found) == [
        'flow "c" > "f" > "f" > "f" > "f" > "f" (JobFlowTemplates "t0" > "t1" > "t2" > "t3" > "t4"): the child would '
        "nest 6 levels deep, more than 5 (does the JobFlowTemplate include itself? flatten the pipeline, or make a "
        "deep part a JobFlow of its own)"]


def test_a_child_at_max_depth_is_fine():
    chain = [template(f"t{i}", f"[{{name: f, jobFlow: {{template: t{i + 1}}}}}]") for i in range(4)]
    leaf = template("t4", "[{name: f}]")
    assert jobflow_nesting(jobflow("[{name: c, jobFlow: {template: t0}}]"), templates=by_name(*chain, leaf)) == \
        nesting.Nesting([], [])


def test_a_parameter_the_child_template_does_not_declare_is_refused_at_any_depth_listing_the_declared_ones():
    outer = template("outer", "[{name: in, jobFlow: {template: inner, parameters: [{name: sise, value: '3'}]}}]")
    inner = template("inner", "[{name: work}]", parameters="[{name: size, value: '1'}, {name: lr, value: '0.1'}]")
    found = jobflow_nesting(jobflow("[{name: go, jobFlow: {template: outer}}]"), templates=by_name(outer, inner))
    assert errors_of(found) == [
        'flow "go" > "in" (JobFlowTemplate "outer"): jobFlow.parameters sets sise, which JobFlowTemplate "inner" does '
        "not declare (it declares: size, lr) (set only the template's parameters, or declare them in its "
        "spec.jobFlow.spec.parameters)"]


def test_a_template_that_does_not_exist_yet_is_a_note_not_an_error():
    found = jobflow_nesting(jobflow("[{name: a, jobFlow: {template: later}}]"), templates={})
    assert found == nesting.Nesting([], [
        'flow "a": JobFlowTemplate "later" does not exist (yet), so the JobFlows below this flow were not checked; '
        "the flow waits for it"])


def test_a_tree_too_big_to_walk_whole_is_checked_up_to_the_limit_and_says_so(monkeypatch):
    monkeypatch.setattr(nesting, "MAX_CHILDREN", 2)
    leaf = template("leaf", "[{name: w}]")
    found = jobflow_nesting(jobflow("[{name: a, jobFlow: {template: leaf}}, {name: b, jobFlow: {template: leaf}}, "
                                    "{name: c, jobFlow: {template: leaf}}]"), templates=by_name(leaf))
    assert found == nesting.Nesting([], ["only the first 2 child JobFlows of the tree were checked"])


# Names across levels ---------------------------------------------------------------------------------------------


def test_a_childs_flow_named_like_a_parents_flow_is_refused_naming_both():
    t = template("t", "[{name: b}]")
    assert errors_of(jobflow_nesting(jobflow("[{name: a, jobFlow: {template: t}}, {name: a-b}]"),
                                     templates=by_name(t))) == [
        f'flow "a-b" and flow "a" > "b" (JobFlowTemplate "t") can generate the same name "p-a-b" ({RENAME_HINT})']


@pytest.mark.parametrize("parent_flow, other, name", [
    ("{name: a, forEach: {items: [x, y]}, jobFlow: {template: t}}", "a-0-b", "p-a-0-b"),
    ("{name: a, repeat: {until: 'true', limit: 3}, jobFlow: {template: t}}", "a-12-b", "p-a-12-b"),
    ("{name: a, jobFlow: {template: t}}", "a-r3-b", "p-a-r3-b"),
])
def test_items_iterations_and_attempts_count_in_a_collision(parent_flow, other, name):
    t = template("t", "[{name: b}]")
    found = jobflow_nesting(jobflow(f"[{parent_flow}, {{name: {other}}}]"), templates=by_name(t))
    assert errors_of(found) == [
        f'flow "{other}" and flow "a" > "b" (JobFlowTemplate "t") can generate the same name "{name}" ({RENAME_HINT})']


def test_a_childs_flow_named_like_a_retry_collides_with_the_next_childs_name():
    t = template("t", "[{name: r1}]")
    assert errors_of(jobflow_nesting(jobflow("[{name: a, jobFlow: {template: t}}]"), templates=by_name(t))) == [
        f'flow "a" and flow "a" > "r1" (JobFlowTemplate "t") can generate the same name "p-a-r1" ({RENAME_HINT})']


def test_names_that_cannot_meet_are_fine():
    t = template("t", "[{name: b}, {name: c-d}]")
    flows = ("[{name: a, forEach: {items: [x]}, jobFlow: {template: t}}, {name: a-b}, {name: a-x-b}, "
             "{name: a-r0-c-d}, {name: a-01-b}]")
    assert errors_of(jobflow_nesting(jobflow(flows), templates=by_name(t))) == []


def test_collisions_inside_one_jobflow_are_left_to_its_own_checks():
    t = template("t", "[{name: b}, {name: b-r1}, {name: c, retry: {limit: 2}}, {name: c-r1}]")
    assert errors_of(jobflow_nesting(jobflow("[{name: a, jobFlow: {template: t}}, {name: x}, {name: x-r1}]"),
                                     templates=by_name(t))) == []


def test_two_children_of_different_flows_can_collide_too():
    t = template("t", "[{name: c}]")
    u = template("u", "[{name: b-c}]")
    flows = "[{name: a, jobFlow: {template: u}}, {name: a-b, jobFlow: {template: t}}]"
    assert errors_of(jobflow_nesting(jobflow(flows), templates=by_name(t, u))) == [
        f'flow "a" > "b-c" (JobFlowTemplate "u") and flow "a-b" > "c" (JobFlowTemplate "t") can generate the same '
        f'name "p-a-b-c" ({RENAME_HINT})']


# Lengths ---------------------------------------------------------------------------------------------------------


def test_a_childs_vcjob_name_too_long_under_the_last_items_last_retry_is_refused():
    t = template("t", f"[{{name: {'b' * 45}}}]")
    found = jobflow_nesting(jobflow(f"[{{name: {'a' * 10}, forEach: {{range: {{count: 20}}}}, retry: {{limit: 3}}, "
                                    "jobFlow: {template: t}}]"), templates=by_name(t))
    child = "p-aaaaaaaaaa-19-r3"
    assert errors_of(found) == [
        f'flow "aaaaaaaaaa", its child JobFlow "{child}" (JobFlowTemplate "t"): vcjob name "{child}-{"b" * 45}" of '
        f'flow "{"b" * 45}" is not a DNS-1123 label (at most 63 lowercase letters, digits and \'-\', starting and '
        "ending with a letter or digit) (shorten or rename the JobFlow or the flow (and its JobTemplate); a child's "
        "names are under its own, so shorter names above it help too)"]


def test_a_grandchilds_label_too_long_is_refused_at_its_depth():
    inner = template("inner", "[{name: w}]")
    outer = template("outer", f"[{{name: {'m' * 25}, jobFlow: {{template: inner}}}}]")
    found = jobflow_nesting(jobflow(f"[{{name: {'a' * 30}, jobFlow: {{template: outer}}}}]"),
                            templates=by_name(outer, inner))
    grandchild = f"p-{'a' * 30}-{'m' * 25}"
    assert errors_of(found) == [
        f'flow "{"a" * 30}" > "{"m" * 25}" (JobFlowTemplate "outer"), its child JobFlow "{grandchild}" '
        f'(JobFlowTemplate "inner"): label volcano.sh/createdByJobFlow value "default.{grandchild}" is 66 characters '
        "long, more than 63 (shorten the JobFlow name (or use a shorter namespace); a child's names are under its own, "
        "so shorter names above it help too)"]


def test_a_template_is_checked_as_its_run_with_the_longest_name():
    t = template("t", f"[{{name: {'b' * 40}}}]")
    run = template("nightly", "[{name: prepare, jobFlow: {template: t}}]")
    assert [error.message for error in template_nesting(run, templates=by_name(t)).errors] == [
        'spec.jobFlow: flow "prepare", its child JobFlow "nightly-m9999999999-prepare" (JobFlowTemplate "t"): vcjob '
        f'name "nightly-m9999999999-prepare-{"b" * 40}" of flow "{"b" * 40}" is not a DNS-1123 label (at most 63 '
        "lowercase letters, digits and '-', starting and ending with a letter or digit)"]


# Admission: the review, the webhook, kubectl jobflow validate ------------------------------------------------------


def request(obj, *, operation: str = "CREATE", old=None) -> dict:
    kind = obj["kind"]
    return {"uid": "u", "operation": operation, "namespace": "default", "object": obj,
            "kind": {"group": "flow.volcano.sh", "version": "v1alpha1", "kind": kind},
            **({"oldObject": old} if old is not None else {})}


class Reads:
    """A namespace's JobFlowTemplates as the handler reads them, counting the reads."""

    def __init__(self, *templates: JobFlowTemplate, fails: str | None = None) -> None:
        self.templates, self.fails, self.namespaces = by_name(*templates), fails, []

    def __call__(self, namespace: str):
        self.namespaces.append(namespace)
        return self.fails if self.fails is not None else self.templates


def test_an_update_of_a_template_that_closes_a_cycle_is_denied():
    stored_a = template("a", "[{name: x}]")
    b = template("b", "[{name: y, jobFlow: {template: a}}]")
    updated_a = template("a", "[{name: x, jobFlow: {template: b}}]")
    verdict = decide(request(updated_a.to_wire(), operation="UPDATE", old=stored_a.to_wire()), kind=JOBFLOWTEMPLATE,
                     flow_templates=Reads(stored_a, b))
    assert not verdict.allowed
    assert verdict.message == f'JobFlowTemplate "a" includes itself: a -> b -> a (flow "x" of a, flow "y" of b) ' \
                              f"({CYCLE_HINT})"


def test_a_jobflow_with_child_flows_reads_the_templates_of_its_namespace_once():
    t = template("t", "[{name: b}]")
    reads = Reads(t)
    verdict = decide(request(jobflow("[{name: a, jobFlow: {template: t}}, {name: a-b}]").to_wire()), kind=JOBFLOW,
                     flow_templates=reads)
    assert not verdict.allowed and verdict.message.startswith('flow "a-b" and flow "a" > "b" (JobFlowTemplate "t") '
                                                              'can generate the same name "p-a-b"')
    assert reads.namespaces == ["default"]


def test_objects_without_child_flows_and_updates_that_keep_the_spec_read_nothing():
    reads = Reads()
    assert decide(request(jobflow("[{name: a}]").to_wire()), kind=JOBFLOW, flow_templates=reads).allowed
    assert decide(request(template("t", "[{name: a}]").to_wire()), kind=JOBFLOWTEMPLATE, flow_templates=reads).allowed
    parent = jobflow("[{name: a, jobFlow: {template: gone}}]").to_wire()
    relabelled = {**parent, "metadata": {**parent["metadata"], "labels": {"team": "x"}}}
    assert decide(request(relabelled, operation="UPDATE", old=parent), kind=JOBFLOW, flow_templates=reads) \
        == decide(request(relabelled, operation="UPDATE", old=parent), kind=JOBFLOW)
    assert reads.namespaces == []


def test_a_missing_template_is_allowed_with_a_warning():
    verdict = decide(request(jobflow("[{name: a, jobFlow: {template: later}}]").to_wire()), kind=JOBFLOW,
                     flow_templates=Reads())
    assert verdict.allowed
    assert verdict.warnings == ('flow "a": JobFlowTemplate "later" does not exist (yet), so the JobFlows below this '
                                "flow were not checked; the flow waits for it",)


def test_templates_that_cannot_be_read_allow_with_a_warning_that_nesting_was_not_checked():
    loop = template("a", "[{name: x, jobFlow: {template: a}}]")
    verdict = decide(request(loop.to_wire()), kind=JOBFLOWTEMPLATE, flow_templates=Reads(fails="403 Forbidden"))
    assert verdict.allowed
    assert verdict.warnings == ("child JobFlows were not checked: the JobFlowTemplates of namespace default could not "
                                "be read (403 Forbidden)",)


class ForbiddenTemplates:
    """A MemoryKube that may not list JobFlowTemplates (a webhook without that grant)."""

    def __init__(self, kube) -> None:
        self.kube = kube

    def __getattr__(self, name: str):
        return getattr(self.kube, name)

    def list_jobflowtemplates(self, namespace=None):
        from apiclient.rest import ApiError

        raise ApiError(403, "Forbidden")


def webhook(kube):
    from handlers import create_app

    return create_app({"KUBE": kube, "TESTING": True, "VCJOB_SPEC_SCHEMA": None}).test_client()


def admission_review(obj, **options) -> dict:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request(obj, **options)}


def test_the_webhook_lists_the_namespaces_templates_and_denies_a_cycle():
    from memory_kube import MemoryKube

    kube = MemoryKube()
    kube.put(template("b", "[{name: y, jobFlow: {template: a}}]").to_wire())
    kube.put(template("a", "[{name: x}]").to_wire())
    updated = template("a", "[{name: x, jobFlow: {template: b}}]").to_wire()
    answer = webhook(kube).post("/validate/jobflowtemplates",
                                json=admission_review(updated, operation="UPDATE",
                                                      old=template("a", "[{name: x}]").to_wire())).json["response"]
    assert not answer["allowed"]
    assert answer["status"]["message"].startswith('JobFlowTemplate "a" includes itself: a -> b -> a')


def test_the_webhook_that_cannot_list_templates_allows_warns_and_logs_why_once(caplog):
    from memory_kube import MemoryKube

    client = webhook(ForbiddenTemplates(MemoryKube()))
    body = admission_review(template("a", "[{name: x, jobFlow: {template: a}}]").to_wire())
    with caplog.at_level("INFO", logger="handlers.webhooks"):
        answers = [client.post("/validate/jobflowtemplates", json=body).json["response"] for _ in range(2)]
    assert [(a["allowed"], a["warnings"]) for a in answers] == [
        (True, ["child JobFlows were not checked: the JobFlowTemplates of namespace default could not be read "
                "(403 Forbidden)"])] * 2
    logged = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "handlers.webhooks"]
    assert [level for level, _ in logged] == ["WARNING", "INFO"]
    assert logged[0][1].startswith("the webhook cannot read the JobFlowTemplates (403 Forbidden), so it checks no "
                                   "tree of child JobFlows: give its ServiceAccount a token and ClusterRole "
                                   "jobflow-admission")


LOOPING_FILE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {name: a}
spec: {jobFlow: {spec: {flows: [{name: x, jobFlow: {template: b}}]}}}
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {name: b}
spec: {jobFlow: {spec: {flows: [{name: y, jobFlow: {template: a}}]}}}
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: p}
spec: {flows: [{name: c, jobFlow: {template: later}}]}
"""


def test_kubectl_jobflow_validate_checks_the_tree_with_the_files_templates_offline(tmp_path, monkeypatch):
    from kubectl_jobflow.cli import run

    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    path = tmp_path / "tree.yaml"
    path.write_text(LOOPING_FILE)
    out, err = io.StringIO(), io.StringIO()
    assert run(["validate", "-f", str(path)], out=out, err=err) == 2
    assert err.getvalue() == ("note: child JobFlows are checked against the file's JobFlowTemplates only, the "
                              "cluster's could not be listed: no kubeconfig (pass --kubeconfig, or set KUBECONFIG, to "
                              "check them against a cluster's)\n")
    assert out.getvalue().splitlines() == [
        f"{path}#1: JobFlowTemplate default/a is invalid:",
        f'  - JobFlowTemplate "a" includes itself: a -> b -> a (flow "x" of a, flow "y" of b) ({CYCLE_HINT})',
        f"{path}#2: JobFlowTemplate default/b is invalid:",
        f'  - JobFlowTemplate "b" includes itself: b -> a -> b (flow "y" of b, flow "x" of a) ({CYCLE_HINT})',
        f"{path}#3: JobFlow default/p is valid",
        '  warning: flow "c": JobFlowTemplate "later" does not exist (yet), so the JobFlows below this flow were not '
        "checked; the flow waits for it",
    ]


def test_a_stop_or_suspend_of_a_parent_is_not_refused_for_a_template_edited_since():
    edited = template("inner", "[{name: b}]")  # no longer declares the parameter the parent sets
    parent = jobflow("[{name: a, jobFlow: {template: inner, parameters: [{name: lr, value: '1'}]}}]").to_wire()
    stopped = {**parent, "spec": {**parent["spec"], "shutdown": "Stop", "suspend": True}}
    verdict = decide(request(stopped, operation="UPDATE", old=parent), kind=JOBFLOW, flow_templates=Reads(edited))
    assert verdict.allowed
    changed = {**parent, "spec": {**parent["spec"], "parameters": [{"name": "x", "value": "1"}]}}
    assert not decide(request(changed, operation="UPDATE", old=parent), kind=JOBFLOW,
                      flow_templates=Reads(edited)).allowed
