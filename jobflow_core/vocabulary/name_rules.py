"""Kubernetes' naming rules, which every spec check applies (:mod:`jobflow_core.validation.jobflows`)."""

import re

MAX_NAME_LENGTH = 63
"""The limit for a DNS-1123 label and for a label value."""

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def is_dns1123_label(value: str) -> bool:
    """Whether ``value`` is a DNS-1123 label: at most 63 of a-z, 0-9 and '-', starting and ending alphanumeric."""
    return len(value) <= MAX_NAME_LENGTH and _DNS1123_LABEL.fullmatch(value) is not None


def is_dns1123_subdomain(value: str) -> bool:
    """Whether ``value`` is a DNS-1123 subdomain (an object name such as a JobTemplate's): dot-separated labels."""
    return 0 < len(value) <= 253 and all(_DNS1123_LABEL.fullmatch(part) for part in value.split("."))
