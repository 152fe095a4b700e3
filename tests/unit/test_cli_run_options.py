"""``create -p NAME=VALUE`` and ``--generate-name``: the body sent, and the errors that say what to fix."""

import pytest

from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.run_options import apply, as_validated, parse_parameters

BODY = {"kind": "JobFlow", "metadata": {"name": "sweep"},
        "spec": {"parameters": [{"name": "lr", "value": "0.1"}, {"name": "epochs"}], "flows": [{"name": "a"}]}}


def test_values_are_set_on_declared_parameters_and_the_file_is_not_changed():
    sent = apply(BODY, params=parse_parameters(["lr=0.01", "epochs=a=b"]), generate_name=False)
    assert sent["spec"]["parameters"] == [{"name": "lr", "value": "0.01"}, {"name": "epochs", "value": "a=b"}]
    assert BODY["spec"]["parameters"][0]["value"] == "0.1"


def test_a_generated_name_is_checked_at_its_full_length():
    sent = apply(BODY, params={}, generate_name=True)
    assert sent["metadata"] == {"generateName": "sweep-"}
    assert as_validated(sent)["metadata"]["name"] == "sweep-xxxxx"


@pytest.mark.parametrize(("call", "message"), [
    (lambda: parse_parameters(["lr"]), "-p lr: write it as NAME=VALUE, e.g. -p lr=0.01"),
    (lambda: apply(BODY, params={"rate": "1"}, generate_name=False),
     "JobFlow 'sweep' declares no parameter rate (it declares: lr, epochs): fix the name, or declare it under "
     "spec.parameters"),
])
def test_a_wrong_parameter_is_an_error_that_says_what_to_do(call, message):
    with pytest.raises(CommandError) as error:
        call()
    assert str(error.value) == message
