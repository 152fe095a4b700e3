"""``convert -f FILE``: each JobTemplate of the file becomes a vcjob manifest, each vcjob a JobTemplate.

The conversion itself is :func:`kubectl_jobflow.conversion.convert` (the spec is copied as it is; only the envelope
changes). ``--name`` and ``-n/--namespace`` rename the result; without them the input's name and namespace are
kept (a namespace is never made up, so the output applies wherever ``kubectl apply -n`` sends it). Several
documents give several documents, in order: YAML separated by ``---``, or one JSON object each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubectl_jobflow import documents, exits
from kubectl_jobflow.conversion import ConversionError, convert
from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.output import dump_all

if TYPE_CHECKING:
    from kubectl_jobflow.context import Context


def run(ctx: Context) -> int:
    docs = documents.read(ctx.args.file)
    if ctx.args.new_name and len(docs) > 1:
        raise CommandError(f"--name gives one name, but there are {len(docs)} objects: convert them one by one",
                           code=exits.USAGE)
    converted = []
    for doc in docs:
        try:
            converted.append(convert(doc.body, name=ctx.args.new_name, namespace=ctx.namespace_given))
        except ConversionError as error:
            raise ConversionError(f"{doc.source}: {error}") from error
    ctx.write(dump_all(converted, ctx.args.output.format))
    return 0
