"""``make release``: every artifact of a version, into ``dist/``, with no registry (docs/release.md)."""
