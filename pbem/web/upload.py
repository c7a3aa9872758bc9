"""An uploaded record (the /verify page, /api/verify): its bytes read within the upload
limit (a JSON body, or a form's file or text box), and checked as `pbem verify` checks it;
anything unreadable a PageError that says what.
"""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.types import Message as ASGIMessage

from pbem.kinds.verify import Verdict, check_record
from pbem.text.wording import _
from pbem.web.pages import PageError

MULTIPART_SLACK = 64_000     # form boundaries and headers around an uploaded file


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    too_big = PageError(413, _("Too large"), _(
        "A record may have at most {limit} bytes; this upload is larger. Is it the right "
        "file?", limit=format(limit, ",")))
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise too_big
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


async def uploaded(request: Request, limit: int) -> bytes:
    """The record's bytes, at most ``limit``: a JSON body, or the multipart form's file
    (or text box)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind in ("multipart/form-data", "application/x-www-form-urlencoded"):
        body = await read_body(request, limit + MULTIPART_SLACK)

        async def replay_body() -> ASGIMessage:
            return {"type": "http.request", "body": body, "more_body": False}

        try:
            form = await Request(request.scope, replay_body).form(
                max_files=1, max_fields=4, max_part_size=limit)
        except Exception as exc:  # noqa: BLE001 - multipart parse errors: the sender's
            raise PageError(400, _("Not a form upload"), _(
                "The upload could not be read as a form: {problem}",
                problem=str(exc))) from None
        upload = form.get("record")
        data = b""
        if upload is not None and not isinstance(upload, str):
            data = await upload.read(limit + 1)
        if not data.strip():
            text = form.get("text")
            data = text.encode() if isinstance(text, str) else b""
        if len(data) > limit:
            raise PageError(413, _("Too large"), _("A record may have at most {limit} bytes.",
                                                    limit=format(limit, ",")))
        return data
    if kind in ("application/json", "text/plain", ""):
        return await read_body(request, limit)
    raise PageError(415, _("Not a record"), _(
        "Send the record as a file in the form, or as application/json."))


def read_and_check(raw: bytes) -> Verdict:
    """`pbem verify` on uploaded bytes; anything unreadable is a PageError saying what."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PageError(400, _("Not a record"), _(
            "The file is not UTF-8 text (byte {byte} is not): a record is a JSON file.",
            byte=exc.start)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PageError(400, _("Not valid JSON"), _(
            "The file is not valid JSON: {problem} at line {line}, column {column}.",
            problem=exc.msg, line=exc.lineno, column=exc.colno)) from None
    except (RecursionError, ValueError) as exc:
        raise PageError(400, _("Not valid JSON"), _("The file cannot be read as JSON: {problem}.",
                                                     problem=str(exc))) from None
    try:
        return check_record(data)
    except KeyError as exc:
        raise PageError(422, _("Not a game record"), _(
            "This is JSON, but not a game record: it has no {field} field.",
            field=str(exc))) from None
    except Exception as exc:  # noqa: BLE001 - a hostile record may break the reader anywhere
        raise PageError(422, _("Not a game record"), _(
            "This is JSON, but not a game record pbem can read: {problem}",
            problem=str(exc))) from None
