"""bench/house.py finds every kind of hidden mechanism it names, with its place: a
library class subclassed to redefine its methods, an assignment into a library or a
compiled function's globals, state found by isinstance against such a subclass,
session.info and import-time listeners; the listeners a function sets up on an engine
or a session and the documented extension points are listed beside them, not counted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HIDDEN = '''
import jinja2
import jinja2.runtime
from sqlalchemy import event
from sqlmodel import Session


class Fast(jinja2.Environment):
    def getattr(self, obj, attribute):
        return obj[attribute]


class Calls(jinja2.runtime.Context):
    def call(self, obj, *args, **kwargs):
        return obj(*args, **kwargs)


class Unit(Session):
    def commit(self):
        super().commit()


jinja2.Template.from_code = classmethod(lambda cls, *a: None)


def patch(template):
    template.root_render_func.__globals__["escape"] = str


def memo_of(session):
    return session.memo if isinstance(session, Unit) else None


def info(session):
    return session.info.get("x")


event.listen(Session, "after_commit", print)


@event.listens_for(Session, "after_rollback")
def forget(session):
    pass


def make(engine):
    event.listen(engine, "begin", print)
'''

PLAIN = '''
import logging

import aiosmtpd.smtp
import jinja2
import jinja2.ext
from sqlalchemy import event
from sqlmodel import Session


class Loader(jinja2.BaseLoader):
    def get_source(self, environment, template):
        raise jinja2.TemplateNotFound(template)


class Said(jinja2.ext.Extension):
    def filter_stream(self, stream):
        return stream


class Problem(ValueError):
    pass


class Lines(logging.Formatter):
    def format(self, record):
        return record.getMessage()


class Pinging(aiosmtpd.smtp.SMTP):
    async def smtp_PING(self, arg):
        await self.push("259 Pong")

    async def smtp_DATA(self, arg):
        await self.push("554 no")


class Carrying(Session):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.memo = {}
        event.listen(self, "after_commit", self._committed)

    def _committed(self, session):
        self.memo.clear()
'''

# pbem/mail/arrival_auth.py and pbem/mail/smtpguard.py as house.py's KEPT_OVERRIDES
# names them: the methods listed there are kept with their reason, any other is counted
KEPT_SPF = '''
import spf


class _Spf(spf.query):
    def dns(self, name, qtype, cnames=None, ignore_void=False):
        return []
'''

KEPT_GUARD = '''
from aiosmtpd.smtp import SMTP


class GuardedSMTP(SMTP):
    def connection_made(self, transport):
        super().connection_made(transport)

    async def smtp_DATA(self, arg):
        await self.push("554 no")

    def data_received(self, data):
        super().data_received(data)
'''


def house(repo: Path) -> str:
    return subprocess.run([sys.executable, str(ROOT / "bench" / "house.py"), "--repo", str(repo)],
                          check=True, capture_output=True, text=True).stdout


def count(out: str, title: str) -> int:
    """The figure printed after ``title``."""
    found = re.search(re.escape(title) + r"\s+(\d+)", out)
    assert found is not None, title
    return int(found.group(1))


def test_every_kind_is_found_with_its_place(tmp_path: Path) -> None:
    (tmp_path / "pbem").mkdir()
    (tmp_path / "pbem" / "hidden.py").write_text(HIDDEN, encoding="utf-8")
    (tmp_path / "pbem" / "plain.py").write_text(PLAIN, encoding="utf-8")
    out = house(tmp_path)
    assert count(out, "hidden mechanisms:") == 9
    assert count(out, "library classes overridden:") == 3
    for found in ("pbem/hidden.py:8: class Fast(jinja2.Environment) redefines getattr",
                  "pbem/hidden.py:13: class Calls(jinja2.runtime.Context) redefines call",
                  "pbem/hidden.py:18: class Unit(sqlmodel.Session) redefines commit",
                  "pbem/hidden.py:23: jinja2.Template.from_code",
                  "pbem/hidden.py:27: template.root_render_func.__globals__['escape']",
                  "pbem/hidden.py:31: isinstance(session, Unit)",
                  "pbem/hidden.py:35: session.info",
                  "pbem/hidden.py:38: event.listen(Session, 'after_commit', print)",
                  "pbem/hidden.py:41: @event.listens_for(Session, 'after_rollback')",
                  "pbem/hidden.py:47: event.listen(engine, 'begin', print) in make()"):
        assert found in out, found
    assert count(out, "library modules or classes patched:") == 2
    assert count(out, "import-time event listeners:") == 2
    # a Session subclass that redefines nothing and listens on itself: listed, not hidden
    assert count(out, "event listeners set up per call:") == 2
    assert count(out, "subclassed extension points:") == 5
    for found in ("class Lines(logging.Formatter) (format;",
                  "class Pinging(aiosmtpd.smtp.SMTP) (smtp_DATA;",
                  "class Carrying(sqlmodel.Session) (nothing;",
                  "event.listen(self, 'after_commit', self._committed) in __init__()"):
        assert found in out.split("not hidden, listed:")[1], found
    assert "class Problem" not in out     # an exception of ours is no mechanism


def test_the_package_itself_patches_nothing() -> None:
    """pbem renders through Jinja2's public API and patches no library."""
    out = house(ROOT)
    assert count(out, "library modules or classes patched:") == 0
    assert "jinja2" not in out.split("not hidden, listed:")[0]
    assert count(out, "import-time event listeners:") == 0
    assert count(out, "session.info:") == 0


def test_a_kept_override_is_listed_with_its_reason_and_only_for_its_methods(
        tmp_path: Path) -> None:
    (tmp_path / "pbem" / "mail").mkdir(parents=True)
    (tmp_path / "pbem" / "mail" / "arrival_auth.py").write_text(KEPT_SPF, encoding="utf-8")
    (tmp_path / "pbem" / "mail" / "smtpguard.py").write_text(KEPT_GUARD, encoding="utf-8")
    out = house(tmp_path)
    hidden, listed = out.split("not hidden, listed:")
    assert count(out, "overrides kept, with their reason:") == 1
    assert "class _Spf(spf.query) redefines dns: pyspf has no resolver" in listed
    # data_received is no kept method: the whole class counts as hidden again
    assert count(out, "hidden mechanisms:") == 1
    assert ("class GuardedSMTP(aiosmtpd.smtp.SMTP) redefines connection_made, "
            "data_received, smtp_DATA") in hidden


def test_the_package_hides_no_mechanism() -> None:
    """pbem.store.work's Work redefines none of Session's methods and listens to no
    Session event: what it carries it keeps right by its own methods."""
    out = house(ROOT)
    assert count(out, "hidden mechanisms:") == 0
    listed = out.split("not hidden, listed:")[1]
    assert "pbem/store/work.py" in listed and "class Work(sqlmodel.Session) (nothing;" in listed
    assert "event.listen(self," not in out


def test_what_a_work_carries_is_passed_as_a_work() -> None:
    """No function of the package asks whether its session is a Work (isinstance): one that
    needs the memo, the replies or the queued mail takes a Work."""
    out = house(ROOT)
    assert count(out, "state found by isinstance:") == 0
