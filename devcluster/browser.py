"""The browser the dashboard's tests drive: Debian's Chromium and its chromedriver, installed by the project.

Like podman (:mod:`devcluster.podman`), the packages come from the machine's Debian mirror with ``apt-get`` when
running as root (CI is), once per machine; without root and without the packages the browser tier is skipped,
saying how to install them. Nothing is downloaded from anywhere else (selenium's own driver download is never
used: the driver's path is given).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from devcluster.podman import PodmanError, ensure_tools, is_root

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
PACKAGES = {CHROMIUM: "chromium", CHROMEDRIVER: "chromium-driver", "fc-match": "fontconfig"}
"""What the tier needs -> the Debian package that has it (fonts come with chromium's dependencies)."""


class BrowserMissing(RuntimeError):
    """Chromium or its driver is not installed and cannot be installed here; the message says how."""


def ensure_browser(*, log=print) -> tuple[Path, Path]:
    """The paths of chromium and chromedriver, installing them first if needed (and possible)."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not Path(path).exists()]
    if missing and not is_root():
        raise BrowserMissing("the browser tier needs Debian's chromium and chromium-driver; installing them needs "
                             "root (CI has it). Install them yourself: sudo apt-get install --no-install-recommends "
                             "chromium chromium-driver")
    try:
        ensure_tools(PACKAGES, log=log)
    except PodmanError as error:
        raise BrowserMissing(str(error)) from error
    if shutil.which("fc-match") is None:
        raise BrowserMissing("fontconfig is missing after installing it: check apt-get's output")
    return Path(CHROMIUM), Path(CHROMEDRIVER)
