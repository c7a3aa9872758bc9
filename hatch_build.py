"""The wheel's build step: each language's gettext catalogues compiled into one .mo.

An installed pbem then reads pbem/locale/<lang>/LC_MESSAGES/pbem.mo as it is and
compiles nothing at run time (pbem.text.i18n); the .po files, which only translators and
the catalogue tools read, stay out of the wheel. The merge of a language's .po files
is pbem.text.i18n's own (compiled_catalogue), so the build and a source checkout agree.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CatalogueBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return   # an editable install reads the .po files of its checkout
        sys.path.insert(0, self.root)
        try:
            from pbem.text.i18n import LANGUAGES, compiled_catalogue
        finally:
            sys.path.remove(self.root)
        self._made = Path(tempfile.mkdtemp(prefix="pbem-mo-"))
        for language in sorted(LANGUAGES):
            compiled = compiled_catalogue(language)
            if compiled is None:
                continue
            made = self._made / f"{language}.mo"
            made.write_bytes(compiled)
            build_data["force_include"][str(made)] = \
                f"pbem/locale/{language}/LC_MESSAGES/pbem.mo"

    def finalize(self, version: str, build_data: dict[str, Any],
                 artifact_path: str) -> None:
        made = getattr(self, "_made", None)
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
