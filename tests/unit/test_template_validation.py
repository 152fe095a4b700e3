"""A JobTemplate is valid when the vcjob made from it would pass Volcano's rules, and its name can name a flow."""

import pytest
import yaml

from jobflow_core.models import JobTemplate
from jobflow_core.validation.jobtemplates import VALID_ACTIONS, VALID_EVENTS, validate_template

GOOD = """
minAvailable: 3
maxRetry: 3
queue: default
policies:
  - {event: PodEvicted, action: RestartJob}
  - {exitCode: 137, action: RestartTask}
tasks:
  - name: ps
    replicas: 1
    template: {spec: {containers: [{name: ps, image: busybox}]}}
  - name: worker
    replicas: 2
    minAvailable: 2
    policies:
      - {events: [TaskCompleted], action: CompleteJob}
    template: {spec: {containers: [{name: worker, image: busybox}]}}
"""


def template(spec: str, *, name: str = "train", namespace: str = "default") -> JobTemplate:
    return JobTemplate.model_validate(
        {"metadata": {"name": name, "namespace": namespace}, "spec": yaml.safe_load(spec)}
    )


def messages(spec: str, **kwargs: str) -> list[str]:
    return [error.message for error in validate_template(template(spec, **kwargs))]


def test_a_two_task_template_with_policies_is_valid():
    assert messages(GOOD) == []


def test_a_template_without_tasks_is_rejected_with_volcanos_message():
    assert messages("{minAvailable: 0}") == ["No task specified in job spec"]
    assert messages("{tasks: []}") == ["No task specified in job spec"]


def test_a_negative_job_min_available_is_rejected():
    assert messages("{minAvailable: -1, tasks: [{name: a, replicas: 1}]}") == ["job 'minAvailable' must be >= 0"]


def test_a_negative_max_retry_is_rejected():
    assert messages("{maxRetry: -1, tasks: [{name: a, replicas: 1}]}") == ["'maxRetry' cannot be less than zero"]


def test_a_negative_ttl_is_rejected():
    assert messages("{ttlSecondsAfterFinished: -5, tasks: [{name: a, replicas: 1}]}") == [
        "'ttlSecondsAfterFinished' cannot be less than zero"
    ]


def test_duplicate_task_names_are_rejected_naming_both_tasks():
    [error] = validate_template(template("{tasks: [{name: a, replicas: 1}, {name: b}, {name: a, replicas: 1}]}"))
    assert error.message == "duplicated task name a"
    assert "spec.tasks[2] repeats spec.tasks[0]" in error.hint


def test_an_unnamed_task_is_named_like_volcano_names_it_so_it_can_collide():
    assert messages("{tasks: [{replicas: 1}, {name: default0, replicas: 1}]}") == ["duplicated task name default0"]


@pytest.mark.parametrize("name", ["Worker", "my_task", "-a", "a-", "a.b", "x" * 64])
def test_a_task_name_must_be_a_dns_label(name):
    assert messages(f"{{tasks: [{{name: '{name}', replicas: 1}}]}}") == [
        f'task name "{name}" in spec.tasks[0] is not a DNS-1123 label'
    ]


def test_negative_replicas_are_rejected():
    assert messages("{tasks: [{name: a, replicas: -1}]}") == ["'replicas' < 0 in task: a"]


def test_a_negative_task_min_available_is_rejected():
    assert messages("{tasks: [{name: a, replicas: 1, minAvailable: -1}]}") == ["'minAvailable' < 0 in task: a"]


def test_a_task_min_available_above_its_replicas_is_rejected_saying_both_numbers():
    [error] = validate_template(template("{tasks: [{name: a, replicas: 2, minAvailable: 3}]}"))
    assert error.message == "'minAvailable' is greater than 'replicas' in task: a"
    assert "replicas 2 and minAvailable 3" in error.hint


def test_the_job_min_available_may_not_exceed_all_replicas():
    [error] = validate_template(template("{minAvailable: 4, tasks: [{name: a, replicas: 1}, {name: b, replicas: 2}]}"))
    assert error.message == "job 'minAvailable' should not be greater than total replicas in tasks"
    assert "spec.minAvailable is 4 but the tasks have 3 replicas in all" in error.hint


def test_the_job_min_available_may_equal_all_replicas():
    assert messages("{minAvailable: 3, tasks: [{name: a, replicas: 1}, {name: b, replicas: 2}]}") == []


def test_an_unknown_policy_event_is_rejected_listing_the_valid_ones():
    [error] = validate_template(template("{policies: [{event: PodRunning, action: RestartJob}], tasks: [{name: a}]}"))
    assert error.message == 'invalid policy event "PodRunning" in spec.policies[0]'
    assert all(event in error.hint for event in VALID_EVENTS)


def test_an_unknown_policy_action_is_rejected_in_a_task_too():
    [error] = validate_template(
        template("{tasks: [{name: a, policies: [{events: [PodFailed], action: Reboot}]}]}")
    )
    assert error.message == 'invalid policy action "Reboot" in spec.tasks[0].policies[0]'
    assert all(action in error.hint for action in VALID_ACTIONS)


@pytest.mark.parametrize(
    "policies, message",
    [
        ("[{event: PodFailed, exitCode: 1, action: RestartJob}]",
         "must not specify event and exitCode simultaneously in spec.policies[0]"),
        ("[{action: RestartJob}]", "either event and exitCode should be specified in spec.policies[0]"),
        ("[{exitCode: 0, action: RestartJob}]", "0 is not a valid error code in spec.policies[0]"),
        ("[{exitCode: 3, action: RestartJob}, {exitCode: 3, action: AbortJob}]",
         "duplicate exitCode 3 in spec.policies"),
        ("[{event: PodFailed, action: RestartJob}, {events: [PodFailed], action: AbortJob}]",
         "duplicate event PodFailed across different policy in spec.policies"),
        ("[{event: '*', action: RestartJob}, {event: PodFailed, action: AbortJob}]",
         "if there's * here, no other policy should be here (spec.policies)"),
    ],
)
def test_policies_follow_volcanos_rules(policies, message):
    assert messages(f"{{policies: {policies}, tasks: [{{name: a}}]}}") == [message]


def test_a_template_name_that_cannot_name_a_vcjob_is_rejected():
    [error] = validate_template(template(GOOD, name="train.v2"))
    assert error.code == "InvalidTemplateName"
    assert 'JobTemplate name "train.v2" is not a DNS-1123 label' in error.message


def test_a_template_name_whose_label_value_is_too_long_is_rejected():
    name = "t" * 56  # "default." + 56 characters = 64
    assert messages(GOOD, name=name) == [
        f'label volcano.sh/createdByJobTemplate value "default.{name}" is 64 characters long, more than 63'
    ]


def test_every_problem_is_reported_each_with_what_to_do():
    errors = validate_template(template("{minAvailable: -1, maxRetry: -1, tasks: [{name: A, replicas: -1}]}"))
    assert [error.message for error in errors] == [
        "job 'minAvailable' must be >= 0",
        "'maxRetry' cannot be less than zero",
        'task name "A" in spec.tasks[0] is not a DNS-1123 label',
        "'replicas' < 0 in task: A",
    ]
    assert all(error.hint for error in errors)
