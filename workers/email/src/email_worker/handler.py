"""The email worker's entry: formats eml, msg, mbox and ics, and how a job becomes a
submission (an mbox is fanned out into eml child jobs: mailbox.py; an .ics file is a
CALENDAR and its EVENTs: calendar_file.py).

Job options (all optional):

- `clarify`               record temporal ambiguities (`--option clarify=true`)
- `max_bytes`             refuse a message larger than this as too_large (default 100 MiB)
- `max_attachment_bytes`  attachments larger than this become too_large child jobs
                          (default 25 MiB; inherited by enclosed messages' jobs)
- `email_depth`           set by the worker on enclosed messages' child jobs
- `max_messages`          refuse an mbox with more messages as too_large (default 200,000)
- `max_events`            events read from an .ics file (default 10,000; more are counted)
"""

from __future__ import annotations

from collections.abc import Mapping

from workers_common import Handler, InvalidInput, Job, TooLarge

from .attachments import DEFAULT_MAX_ATTACHMENT_BYTES, routed_formats
from .calendar_file import handle_ics
from .eml import parse_eml
from .mailbox import handle_mbox
from .options import DEFAULT_MAX_BYTES, int_option
from .outlook import OLE_SIGNATURE, parse_msg
from .projection import ProjectionSettings, project

__all__ = ["DEFAULT_MAX_BYTES", "FORMATS", "HANDLERS", "handle"]

FORMATS = ("eml", "msg", "mbox", "ics")
_INHERITED = ("clarify", "max_attachment_bytes")


def handle(job: Job) -> bytes:
    """Projects one .eml or .msg job (typed failures: invalid_input, unsupported, too_large)."""
    limit = int_option(job.options, "max_bytes", DEFAULT_MAX_BYTES)
    if job.content is not None and job.content.size > limit:
        raise TooLarge(f"message of {job.content.size} bytes is over max_bytes={limit}")
    # The bytes decide the reader, not the name: an Outlook .msg saved as .eml (or with no
    # extension) is read as one, and a MIME message named .msg as MIME.
    if _starts_ole(job):
        with job.content_path() as path:
            parsed = parse_msg(path)
    elif job.format == "msg":
        try:
            parsed = parse_eml(job.read_bytes())
        except InvalidInput as err:
            raise InvalidInput(
                f"not an Outlook .msg (the file does not start with the OLE2 signature) "
                f"nor a MIME message: {err}"
            ) from err
    else:
        parsed = parse_eml(job.read_bytes())
    settings = ProjectionSettings(
        routed_formats=routed_formats(),
        max_attachment_bytes=int_option(
            job.options, "max_attachment_bytes", DEFAULT_MAX_ATTACHMENT_BYTES
        ),
        depth=int_option(job.options, "email_depth", 0),
        child_options={key: job.options[key] for key in _INHERITED if key in job.options},
    )
    return project(parsed, settings, job.options)


def _starts_ole(job: Job) -> bool:
    """Whether the content starts with the OLE2 compound file signature (a .msg's)."""
    head = b""
    for chunk in job.iter_chunks(len(OLE_SIGNATURE)):
        head = chunk
        break
    return head == OLE_SIGNATURE


HANDLERS: Mapping[str, Handler] = {
    "eml": handle,
    "msg": handle,
    "mbox": handle_mbox,
    "ics": handle_ics,
}
