"""``python -m release [--dist DIR] [--no-image]``: every artifact of this version (docs/release.md).

``--no-image`` is for a machine without root: the manifests and the chart then name the image by tag only, and the
list says so. CI runs it with the image.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from devcluster import image as images
from devcluster.podman import PodmanError
from release import artifacts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make release", description=__doc__.splitlines()[0])
    parser.add_argument("--dist", type=Path, default=artifacts.REPO / "dist", help="where the artifacts go "
                        "(emptied first)")
    parser.add_argument("--no-image", action="store_true", help="no image archive; pin nothing (no root needed)")
    args = parser.parse_args(argv)
    dist: Path = args.dist
    version = images.project_version()
    shutil.rmtree(dist, ignore_errors=True)
    dist.mkdir(parents=True)
    started = time.monotonic()

    def say(line: str) -> None:
        print(f"release: {line} ({time.monotonic() - started:.0f} s)", flush=True)

    made = artifacts.python_packages(dist)
    say("wheel and sdist")
    digest = None
    if not args.no_image:
        try:
            archive, digest = artifacts.image_archive(dist, version, log=lambda line: print(line, flush=True))
        except PodmanError as error:
            print(f"release: {error}\nrelease: `make release NO_IMAGE=1` makes the rest without the image",
                  file=sys.stderr)
            return 1
        made.append(archive)
        say(f"image {artifacts.REPOSITORY}:{version}@{digest}")
    made += artifacts.manifests(dist, version, digest)
    made.append(artifacts.chart(dist, version, digest))
    made.append(artifacts.sbom(dist, version))
    say("manifests, chart, SBOM")
    made.append(artifacts.checksums(dist, made))
    print(f"\n{version}: {len(made)} artifacts in {dist}" + ("" if digest else " (no image: nothing pinned)"))
    for path in made:
        print(f"  {path.stat().st_size:>12,}  {path.name}")
    if digest:
        print(f"  image digest: {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
