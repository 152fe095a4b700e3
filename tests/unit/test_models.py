"""The models read what the API server sends and write it back unchanged."""

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
import yaml
from hypothesis import given, strategies as st
from pydantic import ValidationError

from jobflow_core.models import FlowJobStatus, JobFlow, JobFlowStatus, JobTemplate, VcJob, VcJobPhase
from jobflow_core.models.base import format_time

VCJOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: test-b
  namespace: default
  uid: 5b0b8d3e-0000-4000-8000-000000000002
  resourceVersion: "48213"
  generation: 1
  creationTimestamp: "2026-01-02T03:04:05Z"
  finalizers: [volcano.sh/job-finalizer]
  labels:
    volcano.sh/createdByJobFlow: default.test
    volcano.sh/createdByJobTemplate: default.b
  annotations:
    volcano.sh/createdByJobFlow: default.test
    volcano.sh/createdByJobTemplate: default.b
  ownerReferences:
    - apiVersion: flow.volcano.sh/v1alpha1
      kind: JobFlow
      name: test
      uid: 0d4f6f5e-7b7c-4c55-9a5e-2f1f5c0e0001
      controller: true
      blockOwnerDeletion: true
  managedFields:
    - manager: vc-controller-manager
      operation: Update
      apiVersion: batch.volcano.sh/v1alpha1
      time: "2026-01-02T03:04:06Z"
      fieldsType: FieldsV1
      fieldsV1: {"f:status": {".": {}, "f:state": {}}}
spec:
  schedulerName: volcano
  minAvailable: 0
  queue: default
  maxRetry: 3
  ttlSecondsAfterFinished: 600
  priorityClassName: high
  minSuccess: 1
  runningEstimate: 1h0m0s
  futureJobField: {enabled: true}
  volumes:
    - mountPath: /data
      volumeClaimName: shared
    - mountPath: /scratch
      volumeClaim:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 1Gi}}
  policies:
    - event: PodEvicted
      action: RestartJob
    - events: [PodFailed, Unknown]
      action: AbortJob
      timeout: 10m
    - exitCode: 3
      action: TerminateJob
  plugins:
    ssh: []
    env: []
    svc: ["--publish-not-ready-addresses=false"]
  networkTopology:
    mode: hard
    highestTierAllowed: 1
  tasks:
    - name: worker
      replicas: 2
      minAvailable: 1
      maxRetry: 5
      topologyPolicy: best-effort
      dependsOn: {name: [ps], iteration: any}
      partitionPolicy: {totalPartitions: 2, partitionSize: 1, minPartitions: 0}
      futureTaskField: x
      policies:
        - event: TaskCompleted
          action: CompleteJob
      template:
        metadata:
          creationTimestamp: null
          labels: {app: worker}
        spec:
          restartPolicy: OnFailure
          nodeSelector: null
          tolerations:
            - {key: gpu, operator: Exists, effect: NoSchedule}
          containers:
            - name: main
              image: busybox:1.36
              command: [sh, -c, "echo hello && sleep 5"]
              env: [{name: MODE, value: train}]
              ports: [{containerPort: 8080, name: http, protocol: TCP}]
              resources:
                requests: {cpu: 500m, memory: 256Mi}
                limits: {nvidia.com/gpu: "1"}
              volumeMounts: [{name: cache, mountPath: /cache}]
          volumes:
            - name: cache
              emptyDir: {}
status:
  state:
    phase: Completed
    reason: ""
    lastTransitionTime: "2026-01-02T03:07:01Z"
  minAvailable: 1
  taskStatusCount:
    worker:
      phase: {Succeeded: 2}
  succeeded: 2
  version: 3
  retryCount: 1
  runningDuration: 2m56s
  controlledResources: {plugin-ssh: ssh, plugin-svc: svc}
  conditions:
    - status: Pending
      lastTransitionTime: "2026-01-02T03:04:05Z"
    - status: Running
      lastTransitionTime: "2026-01-02T03:04:30Z"
    - status: Completed
      lastTransitionTime: "2026-01-02T03:07:01Z"
  futureStatusField: 7
"""


def test_a_vcjob_survives_a_round_trip_unchanged_including_fields_we_do_not_model():
    data = yaml.safe_load(VCJOB)
    assert VcJob.model_validate(data).to_wire() == data


def test_a_jobtemplate_survives_a_round_trip_unchanged():
    vcjob = yaml.safe_load(VCJOB)
    data = {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobTemplate",
        "metadata": {"name": "b", "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": vcjob["spec"],
        "status": {"jobDependsOnList": ["test-b"]},
    }
    assert JobTemplate.model_validate(data).to_wire() == data


def test_a_jobflow_with_probes_and_a_patch_survives_a_round_trip_unchanged():
    data = yaml.safe_load(
        """
        apiVersion: flow.volcano.sh/v1alpha1
        kind: JobFlow
        metadata: {name: test, namespace: default, uid: u1, generation: 2}
        spec:
          jobRetainPolicy: retain
          flows:
            - name: a
            - name: b
              dependsOn:
                targets: [a]
                probe:
                  httpGetList:
                    - {taskName: web, path: /healthz, port: 8080, httpHeader: {name: X-Probe, value: "1"}}
                  tcpSocketList:
                    - {taskName: db, port: 5432}
                  taskStatusList:
                    - {taskName: ps, phase: Running}
              patch:
                jobSpec:
                  queue: default
                  maxRetry: 3
                  tasks: [{name: worker, replicas: 4}]
        status:
          pendingJobs: [test-b]
          completedJobs: [test-a]
          jobStatusList:
            - name: test-a
              state: Completed
              startTimestamp: "2026-01-02T03:04:05Z"
              endTimestamp: "2026-01-02T03:07:01Z"
              restartCount: 0
              runningHistories:
                - {startTimestamp: "2026-01-02T03:04:05Z", endTimestamp: "2026-01-02T03:07:01Z", state: Running}
                - {startTimestamp: "2026-01-02T03:07:01Z", state: Completed}
          conditions:
            test-a:
              phase: Completed
              createTime: "2026-01-02T03:04:05Z"
              runningDuration: 2m56s
              taskStatusCount: {nginx: {phase: {Succeeded: 1}}}
          state: {phase: Running}
        """
    )
    assert JobFlow.model_validate(data).to_wire() == data


def test_a_status_upstream_wrote_with_null_timestamps_parses_and_the_nulls_are_not_written_back():
    upstream = {
        "jobStatusList": [
            {
                "name": "test-a",
                "state": "Running",
                "startTimestamp": "2026-01-02T03:04:05Z",
                "endTimestamp": None,
                "runningHistories": [
                    {"startTimestamp": "2026-01-02T03:04:10Z", "endTimestamp": None, "state": "Running"}
                ],
            }
        ],
        "state": {"phase": "Running"},
    }
    wire = JobFlowStatus.model_validate(upstream).to_wire()
    assert "null" not in json.dumps(wire)
    assert wire["jobStatusList"][0] == {
        "name": "test-a",
        "state": "Running",
        "startTimestamp": "2026-01-02T03:04:05Z",
        "runningHistories": [{"startTimestamp": "2026-01-02T03:04:10Z", "state": "Running"}],
    }


def test_timestamps_are_written_in_utc_with_whole_seconds_and_a_z():
    eastern = timezone(timedelta(hours=2))
    record = FlowJobStatus(
        name="test-a", start_timestamp=datetime(2026, 1, 2, 5, 4, 5, 999_999, tzinfo=eastern)
    )
    assert record.to_wire()["startTimestamp"] == "2026-01-02T03:04:05Z"
    parsed = FlowJobStatus.model_validate({"startTimestamp": "2026-01-02T05:04:05.5+02:00"})
    assert parsed.to_wire()["startTimestamp"] == "2026-01-02T03:04:05Z"


def test_status_fields_use_upstreams_json_names_including_its_spelling():
    names = {field.alias or name for name, field in JobFlowStatus.model_fields.items()}
    assert {
        "pendingJobs",
        "runningJobs",
        "failedJobs",
        "completedJobs",
        "terminatedJobs",
        "unKnowJobs",
        "jobStatusList",
        "conditions",
        "state",
    } <= names
    condition = JobFlow.model_validate(
        {"status": {"conditions": {"test-a": {"createTime": "2026-01-02T03:04:05Z"}}}}
    )
    assert condition.to_wire()["status"]["conditions"]["test-a"] == {"createTime": "2026-01-02T03:04:05Z"}


def test_a_vcjob_without_status_is_in_the_phase_not_yet_seen_by_volcano():
    job = VcJob.model_validate({"metadata": {"name": "test-a"}})
    assert job.phase is VcJobPhase.NEW


def test_models_are_frozen_so_a_plan_cannot_change_its_inputs():
    job = VcJob.model_validate({"metadata": {"name": "test-a"}})
    with pytest.raises(ValidationError):
        job.metadata.name = "other"  # type: ignore[misc]


@given(st.datetimes(min_value=datetime(1000, 1, 1), timezones=st.sampled_from([UTC, timezone(timedelta(hours=-7)),
                                                                                timezone(timedelta(hours=5))])))
def test_timestamps_format_as_the_api_server_does_for_any_zone_and_fraction(value):
    expected = value.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert format_time(value) == expected
