"""``status``: each flow in DAG order with its job's phase, age, restarts and pods, or what it waits for."""

from datetime import UTC, datetime

import yaml

from display.facts import take
from kubectl_jobflow.status import as_data, render
from seeds import diamond_yaml

NOW = datetime(2026, 1, 2, 3, 10, 0, tzinfo=UTC)
UID = "4e96c682"

STATUS = """
state: {phase: Running}
progress: 1/5
jobStatusList:
- {name: test-a, state: Completed, startTimestamp: "2026-01-02T03:04:01Z", restartCount: 0}
- {name: test-b, state: Running, startTimestamp: "2026-01-02T03:06:00Z", restartCount: 1}
conditions:
  test-a: {phase: Completed, runningDuration: 1m30s}
waitingFlows:
- {name: c, jobName: test-c, waitingFor: [b], message: 'waiting for "b" to be Completed'}
- {name: d, jobName: test-d, waitingFor: [b], message: 'waiting for "b" to be Completed'}
- {name: e, jobName: test-e, waitingFor: [c, d], message: 'waiting for "c", "d" to be Completed'}
"""
JOBFLOW = diamond_yaml(metadata={"namespace": "default", "uid": UID, "creationTimestamp": "2026-01-02T03:04:00Z"},
                       status=yaml.safe_load(STATUS))

LIVE_B = f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: test-b
  namespace: default
  creationTimestamp: "2026-01-02T03:06:00Z"
  ownerReferences: [{{apiVersion: flow.volcano.sh/v1alpha1, kind: JobFlow, name: test, uid: {UID}, controller: true}}]
spec:
  tasks: [{{name: ps, replicas: 1}}, {{name: worker, replicas: 4}}]
status:
  state: {{phase: Running}}
  retryCount: 1
  taskStatusCount:
    ps: {{phase: {{Running: 1}}}}
    worker: {{phase: {{Succeeded: 1, Running: 2, Pending: 1, Failed: 0}}}}
"""


def test_flows_are_shown_as_a_tree_in_dag_order_with_jobs_pods_and_what_waits():
    snap = take(yaml.safe_load(JOBFLOW), [yaml.safe_load(LIVE_B)])
    assert render(snap, now=NOW).splitlines() == [
        "JobFlow default/test   Running   1/5   age 6m",
        "FLOW         AFTER   JOB                PHASE       AGE     RESTARTS   DETAIL",
        "a                    test-a (deleted)   Completed   5m59s   0          ran 1m30s",
        "└─ b         a       test-b             Running     4m      1          "
        "ps: 1/1 Running; worker: 1/4 Pending, 2/4 Running, 1/4 Succeeded",
        '   └─ c      b       test-c             Waiting     -       -          waiting for "b" to be Completed',
        '   └─ d      b       test-d             Waiting     -       -          waiting for "b" to be Completed',
        '      └─ e   c, d    test-e             Waiting     -       -          waiting for "c", "d" to be Completed',
    ]


def test_a_vcjob_of_another_jobflow_with_the_same_name_is_not_shown_as_this_flows():
    stranger = yaml.safe_load(LIVE_B.replace(UID, "someone-else"))
    snap = take(yaml.safe_load(JOBFLOW), [stranger])
    row = snap.rows[1]
    assert (row.job, row.live, row.phase, row.restarts, row.tasks) == ("test-b", False, "Running", 1, {})


def test_the_reason_a_jobflow_is_blocked_is_shown_under_its_header():
    flow = yaml.safe_load(JOBFLOW)
    flow["status"] = {"state": {"phase": "Pending", "reason": "TemplateNotFound",
                                "message": 'JobTemplate "default/a" not found: create it'}}
    lines = render(take(flow, []), now=NOW).splitlines()
    assert lines[:3] == ["JobFlow default/test   Pending   0/5   age 6m",
                         'TemplateNotFound: JobTemplate "default/a" not found: create it',
                         "FLOW         AFTER   JOB      PHASE     AGE   RESTARTS   DETAIL"]


def test_without_any_status_each_flow_waits_for_its_targets():
    flow = yaml.safe_load(JOBFLOW)
    del flow["status"]
    snap = take(flow, [])
    assert snap.phase == ""
    assert [(row.name, row.phase, row.message) for row in snap.rows] == [
        ("a", "Waiting", None),
        ("b", "Waiting", 'waiting for "a" to be Completed'),
        ("c", "Waiting", 'waiting for "b" to be Completed'),
        ("d", "Waiting", 'waiting for "b" to be Completed'),
        ("e", "Waiting", 'waiting for "c", "d" to be Completed'),
    ]
    assert render(snap, now=NOW).startswith("JobFlow default/test   (no status yet)   0/5   age 6m\n")


def test_the_data_view_has_the_same_facts_for_scripts():
    data = as_data(take(yaml.safe_load(JOBFLOW), [yaml.safe_load(LIVE_B)]), now=NOW)
    assert (data["phase"], data["progress"]) == ("Running", "1/5")
    b = data["flows"][1]
    assert b == {"name": "b", "level": 1, "after": ["a"], "job": "test-b", "phase": "Running", "jobExists": True,
                 "startTimestamp": "2026-01-02T03:06:00Z", "ageSeconds": 240, "restarts": 1,
                 "tasks": {"ps": {"Running": 1}, "worker": {"Pending": 1, "Running": 2, "Succeeded": 1}},
                 "replicas": {"ps": 1, "worker": 4}, "waitingFor": [], "message": None, "runningDuration": None,
                 "expectedStart": None}


def test_a_jobflow_waiting_for_its_queue_says_where_it_stands_in_line():
    waiting = yaml.safe_load(JOBFLOW)
    waiting["status"] = {"state": {"phase": "Pending"}, "progress": "0/5", "queue": {
        "name": "gpu", "state": "Waiting", "position": 3, "requests": {"cpu": "8", "memory": "4Gi"},
        "message": 'waiting for room in Volcano queue "gpu": 3rd in line; ...'}}
    view = render(take(waiting, [], now=NOW), now=NOW)
    assert view.splitlines()[1] == "Queue gpu: Waiting, 3rd in line (needs 8 CPU, 4Gi memory)"
    assert as_data(take(waiting, [], now=NOW), now=NOW)["queue"]["position"] == 3
    admitted = waiting | {"status": {"state": {"phase": "Running"}, "queue": {
        "name": "gpu", "state": "Admitted", "reserved": {"cpu": "8"}}}}
    assert render(take(admitted, [], now=NOW), now=NOW).splitlines()[1] == "Queue gpu: Admitted, reserves 8 CPU"


def test_the_cost_of_the_ended_vcjobs_is_a_line_of_its_own():
    flow = yaml.safe_load(JOBFLOW)
    flow["status"]["cost"] = {"cpuSeconds": 240.0, "memoryGiBSeconds": 120.5, "gpuSeconds": 0.0}
    view = render(take(flow, [], now=NOW), now=NOW)
    assert "Cost: 240 CPU core-s, 120.5 memory GiB-s (requests x seconds run, ended vcjobs)" in view.splitlines()
    assert as_data(take(flow, [], now=NOW), now=NOW)["cost"]["cpuSeconds"] == 240.0


def test_each_flow_shows_what_its_ended_vcjob_cost_in_a_column_of_its_own():
    flow = yaml.safe_load(JOBFLOW)
    flow["status"]["jobStatusList"][0]["cost"] = {"cpuSeconds": 360.0, "memoryGiBSeconds": 90.0, "gpuSeconds": 0.0}
    flow["status"]["cost"] = {"cpuSeconds": 360.0, "memoryGiBSeconds": 90.0, "gpuSeconds": 0.0}
    lines = render(take(flow, [yaml.safe_load(LIVE_B)]), now=NOW).splitlines()
    assert lines[2:5] == [
        "FLOW         AFTER   JOB                PHASE       AGE     RESTARTS   "
        "COST                              DETAIL",
        "a                    test-a (deleted)   Completed   5m59s   0          360 CPU core-s, 90 memory GiB-s   "
        "ran 1m30s",
        "└─ b         a       test-b             Running     4m      1          -                                 "
        "ps: 1/1 Running; worker: 1/4 Pending, 2/4 Running, 1/4 Succeeded",
    ]


def test_the_data_view_gives_a_flows_cost_only_once_it_is_known():
    flow = yaml.safe_load(JOBFLOW)
    flow["status"]["jobStatusList"][0]["cost"] = {"cpuSeconds": 360.0, "memoryGiBSeconds": 90.0, "gpuSeconds": 2.5}
    a, b = as_data(take(flow, [yaml.safe_load(LIVE_B)]), now=NOW)["flows"][:2]
    assert a["cost"] == {"cpuSeconds": 360.0, "memoryGiBSeconds": 90.0, "gpuSeconds": 2.5}
    assert "cost" not in b


def test_a_for_each_flows_cost_adds_up_its_items_vcjobs():
    flow = yaml.safe_load(f"""
metadata: {{name: test, namespace: default, uid: {UID}, creationTimestamp: "2026-01-02T03:04:00Z"}}
spec: {{flows: [{{name: q, forEach: {{items: [1, 2, 3]}}}}]}}
status:
  state: {{phase: Running}}
  jobStatusList:
  - {{name: test-q-0, state: Completed, cost: {{cpuSeconds: 10.5, gpuSeconds: 1.0}}}}
  - {{name: test-q-1, state: Completed, cost: {{cpuSeconds: 20.0, gpuSeconds: 2.0}}}}
""")
    [row] = take(flow, [], now=NOW).rows
    assert (row.cost.cpu_seconds, row.cost.gpu_seconds) == (30.5, 3.0)
    assert "30.5 CPU core-s, 3 GPU-s" in render(take(flow, [], now=NOW), now=NOW).splitlines()[-1]


def test_without_any_cost_the_table_has_no_cost_column():
    view = render(take(yaml.safe_load(JOBFLOW), [yaml.safe_load(LIVE_B)]), now=NOW)
    assert "COST" not in view and "Cost" not in view


def test_a_memoized_flow_that_reused_a_run_is_shown_as_cached_by_status_and_timeline():
    from kubectl_jobflow.timeline import build

    flow = {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
            "metadata": {"name": "two", "namespace": "default", "uid": "u2",
                         "creationTimestamp": "2026-01-02T03:00:00Z"},
            "spec": {"flows": [{"name": "a", "memoize": {}}]},
            "status": {"state": {"phase": "Succeed"}, "completedJobs": ["two-a"], "jobStatusList": [
                {"name": "two-a", "state": "Completed", "reason": "Cached", "cachedFrom": "default/one-a",
                 "startTimestamp": "2026-01-02T03:00:01Z", "endTimestamp": "2026-01-02T03:00:01Z"}]}}
    now = datetime(2026, 1, 2, 3, 5, tzinfo=UTC)
    [row] = take(flow, [], now=now).rows
    assert (row.job, row.phase) == ("two-a", "Cached")
    assert "Cached" in render(take(flow, [], now=now), now=now)
    [bar] = build(flow, [], now=now).bars
    assert bar.phase == "Cached"
