"""``kubectl-jobflow`` / ``python -m kubectl_jobflow``: run one command, exit with its status."""

import sys

from kubectl_jobflow.cli import run


def main() -> int:
    return run(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
