"""The wheel carries each language's catalogues compiled into one .mo (hatch_build.py),
no .po file, and an installed pbem translates from it without compiling anything."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

READS = """
import sys
from pbem.text import i18n
said = i18n.translator("de").gettext("the mail's text is empty")
print(said, "babel.messages.pofile" in sys.modules, i18n.__file__, sep="|")
"""


def test_the_wheel_carries_the_compiled_catalogues_and_reads_them(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(tmp_path / "dist"), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    [wheel] = (tmp_path / "dist").glob("pbem-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "installed")
    for language in ("de", "cs"):
        assert f"pbem/locale/{language}/LC_MESSAGES/pbem.mo" in names
    assert not [name for name in names if name.endswith((".po", ".pot"))]
    # the kinds' parts of the JSON schemas (GameKind.schema_dir) ship beside them
    assert "pbem/kinds/schemas/cup/web-api.schema.json" in names

    env = {**os.environ, "PYTHONPATH": str(tmp_path / "installed")}
    done = subprocess.run([sys.executable, "-c", READS], env=env, cwd=tmp_path, text=True,
                          capture_output=True, check=True, timeout=60)
    said, compiled_po, module = done.stdout.strip().split("|")
    assert said == "der Text der Mail ist leer"
    assert compiled_po == "False"                         # read from the .mo as it is
    assert Path(module).is_relative_to(tmp_path / "installed")


def test_the_container_copies_the_build_step() -> None:
    """`pip install .` in the container runs hatch_build.py: it must be copied there."""
    copied = (ROOT / "deploy" / "Containerfile").read_text()
    assert any(line.startswith("COPY") and "hatch_build.py" in line.split()
               for line in copied.splitlines())
