"""``patch.jobSpec`` merges into the JobTemplate's spec by the design's table, and never invents values."""

import copy

import yaml
from hypothesis import given
from hypothesis import strategies as st

from jobflow_core.flows.patching import merge_job_spec
from jobflow_core.flows.vcjobs import build_job
from scenario import jobflow, template

TEMPLATE = yaml.safe_load("""
minAvailable: 2
queue: research
maxRetry: 5
plugins: {svc: [], env: []}
policies: [{event: PodEvicted, action: RestartJob}]
volumes: [{mountPath: /data, volumeClaimName: data}, {mountPath: /out, volumeClaimName: out}]
tasks:
- name: ps
  replicas: 1
  template:
    spec:
      containers:
      - name: ps
        image: tf:1
        env: [{name: ROLE, value: ps}, {name: LOG, value: info}]
- name: worker
  replicas: 2
  policies: [{event: PodFailed, action: RestartTask}]
  template:
    metadata: {labels: {app: tf}}
    spec:
      volumes: [{name: cache, emptyDir: {}}]
      containers:
      - name: worker
        image: tf:1
        env: [{name: ROLE, value: worker}, {name: LOG, value: info}]
        volumeMounts: [{name: cache, mountPath: /cache}]
      - name: sidecar
        image: logger:1
""")


def merged(patch_yaml: str) -> dict:
    return merge_job_spec(TEMPLATE, yaml.safe_load(patch_yaml))


def test_job_level_scalars_are_replaced_and_everything_else_kept():
    spec = merged("{minAvailable: 3, queue: fast}")
    assert spec == {**TEMPLATE, "minAvailable": 3, "queue": "fast"}


def test_tasks_merge_by_name_containers_by_name_and_env_by_name():
    spec = merged("""
    tasks:
    - name: worker
      replicas: 4
      template:
        spec:
          containers:
          - name: worker
            env: [{name: LOG, value: debug}, {name: EXTRA, value: "1"}]
          - name: sidecar
            image: logger:2
    """)
    worker = spec["tasks"][1]
    assert worker["replicas"] == 4
    assert worker["template"]["spec"]["containers"][0]["env"] == [
        {"name": "ROLE", "value": "worker"}, {"name": "LOG", "value": "debug"}, {"name": "EXTRA", "value": "1"}]
    assert worker["template"]["spec"]["containers"][0]["image"] == "tf:1"
    assert worker["template"]["spec"]["containers"][1] == {"name": "sidecar", "image": "logger:2"}
    assert worker["template"]["metadata"] == {"labels": {"app": "tf"}}
    assert spec["tasks"][0] == TEMPLATE["tasks"][0]


def test_policies_are_replaced_plugins_merged_by_key_volumes_by_mount_path():
    spec = merged("""
    policies: [{event: PodFailed, action: AbortJob}]
    plugins: {ssh: []}
    volumes: [{mountPath: /out, volumeClaimName: results}]
    tasks: [{name: worker, policies: [{event: TaskCompleted, action: CompleteJob}]}]
    """)
    assert spec["policies"] == [{"event": "PodFailed", "action": "AbortJob"}]
    assert spec["plugins"] == {"svc": [], "env": [], "ssh": []}
    assert spec["volumes"] == [{"mountPath": "/data", "volumeClaimName": "data"},
                               {"mountPath": "/out", "volumeClaimName": "results"}]
    assert spec["tasks"][1]["policies"] == [{"event": "TaskCompleted", "action": "CompleteJob"}]


def test_pod_volumes_merge_by_name_and_mounts_by_mount_path():
    spec = merged("""
    tasks:
    - name: worker
      template:
        spec:
          volumes: [{name: cache, hostPath: {path: /tmp}}, {name: scratch, emptyDir: {}}]
          containers: [{name: worker, volumeMounts: [{name: scratch, mountPath: /cache}]}]
    """)
    pod = spec["tasks"][1]["template"]["spec"]
    assert pod["volumes"] == [{"name": "cache", "hostPath": {"path": "/tmp"}}, {"name": "scratch", "emptyDir": {}}]
    assert pod["containers"][0]["volumeMounts"] == [{"name": "scratch", "mountPath": "/cache"}]


def test_a_patch_task_with_a_new_name_is_appended():
    spec = merged("tasks: [{name: evaluator, replicas: 1}]")
    assert [t["name"] for t in spec["tasks"]] == ["ps", "worker", "evaluator"]


def test_null_or_absent_fields_never_override_the_template():
    assert merged("{queue: null, maxRetry: null, tasks: [{name: ps, replicas: null}]}") == TEMPLATE


def test_two_flows_patching_one_template_get_different_vcjobs():
    flow = jobflow("""
    spec:
      flows:
      - {name: tf, patch: {jobSpec: {tasks: [{name: worker, replicas: 8}]}}}
    """)
    other = jobflow("""
    metadata: {name: other}
    spec:
      flows:
      - {name: tf, patch: {jobSpec: {tasks: [{name: worker, replicas: 1}]}}}
    """)
    tf = template("tf", spec=yaml.safe_dump(TEMPLATE))
    first, second = build_job(flow, flow="tf", template=tf), build_job(other, flow="tf", template=tf)
    assert first["spec"]["tasks"][1]["replicas"] == 8
    assert second["spec"]["tasks"][1]["replicas"] == 1
    assert tf.spec.to_wire()["tasks"][1]["replicas"] == 2


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
json_value = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "name", "image"]), inner, max_size=3)),
    max_leaves=12)
task = st.fixed_dictionaries({"name": st.sampled_from(["ps", "worker", "new"])},
                             optional={"replicas": st.integers(0, 9), "extra": json_value})
patches = st.fixed_dictionaries({}, optional={
    "minAvailable": st.integers(0, 9), "queue": st.text(min_size=1, max_size=5),
    "plugins": st.dictionaries(st.sampled_from(["svc", "ssh", "env"]), st.lists(st.text(max_size=3), max_size=2)),
    "tasks": st.lists(task, max_size=3, unique_by=lambda t: t["name"]),
    "unknownField": json_value,
})


def test_merging_an_empty_patch_is_the_identity():
    assert merge_job_spec(TEMPLATE, {}) == TEMPLATE
    assert merge_job_spec(TEMPLATE, None) == TEMPLATE


@given(patches)
def test_merge_is_deterministic_and_leaves_its_inputs_alone(patch):
    before_template, before_patch = copy.deepcopy(TEMPLATE), copy.deepcopy(patch)
    assert merge_job_spec(TEMPLATE, patch) == merge_job_spec(TEMPLATE, patch)
    assert TEMPLATE == before_template and patch == before_patch


@given(patches)
def test_names_not_in_the_patch_are_untouched(patch):
    spec = merge_job_spec(TEMPLATE, patch)
    patched_tasks = {t["name"] for t in patch.get("tasks", [])}
    for original in TEMPLATE["tasks"]:
        if original["name"] not in patched_tasks:
            assert original in spec["tasks"]
    for key, value in TEMPLATE.items():
        if key not in patch:
            assert spec[key] == value
    for name in TEMPLATE["plugins"]:
        if name not in patch.get("plugins", {}):
            assert spec["plugins"][name] == TEMPLATE["plugins"][name]
