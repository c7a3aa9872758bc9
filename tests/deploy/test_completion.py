"""`pbem completion bash|zsh|fish`: each script, run by its own shell, offers the
subcommands, their choices and options of this pbem's command line, and skips an
option's value when it finds the level (`pbem -c pbem.toml d` offers db, demo, dkim)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pbem.cli import build_parser
from pbem.completion import SHELLS, levels


def completion(shell: str, tmp_path: Path) -> Path:
    done = subprocess.run([sys.executable, "-m", "pbem", "completion", shell],
                          capture_output=True, text=True, check=True, timeout=60)
    path = tmp_path / f"pbem.{shell}"
    path.write_text(done.stdout)
    return path


def shell(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        msg = f"{name} is not installed; the completion test needs it (apt-get install {name})"
        if os.environ.get("CI"):
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)
    return found


# the words typed (the last one being completed), and what must be offered
TYPED = [
    (["pbem", "d"], {"db", "demo", "dkim"}),
    (["pbem", "co"], {"config", "completion"}),
    (["pbem", "-c", "pbem.toml", "d"], {"db", "demo", "dkim"}),
    (["pbem", "db", ""], {"backup", "current", "prune", "upgrade"}),
    (["pbem", "demo", "--rules", ""], {"postal", "classic", "cup"}),
    (["pbem", "dkim", "keygen", "--b"], {"--bits"}),
    (["pbem", "completion", ""], set(SHELLS)),
]


def test_bash_completes_subcommands_choices_and_options(tmp_path: Path) -> None:
    script = completion("bash", tmp_path)
    for typed, offered in TYPED:
        words = " ".join(f"'{w}'" for w in typed)
        done = subprocess.run(
            [shell("bash"), "--norc", "-c",
             f'source {script}; complete -p pbem; COMP_WORDS=({words}); '
             f'COMP_CWORD={len(typed) - 1}; _pbem; printf "%s\\n" "${{COMPREPLY[@]}}"'],
            capture_output=True, text=True, check=True, timeout=30)
        registered, *replies = done.stdout.splitlines()
        assert registered == "complete -o default -F _pbem pbem"
        assert set(replies) == offered, typed


def test_fish_completes_subcommands_choices_and_options(tmp_path: Path) -> None:
    script = completion("fish", tmp_path)
    for typed, offered in TYPED:
        line = " ".join(typed)
        done = subprocess.run([shell("fish"), "--no-config", "-c",
                               f"source {script}; complete -C '{line}'"],
                              capture_output=True, text=True, check=True, timeout=30)
        assert {row.split("\t")[0] for row in done.stdout.splitlines()} == offered, typed


def test_zsh_offers_the_words_of_each_level(tmp_path: Path) -> None:
    """zsh filters by the typed prefix itself (compadd): the script offers the level's
    words, read here through stand-ins for compadd and _files."""
    script = completion("zsh", tmp_path)
    for typed, offered in TYPED:
        words = " ".join(f"'{w}'" for w in typed)
        done = subprocess.run(
            [shell("zsh"), "-f", "-c",
             "compdef() { :; }; compadd() { [[ $1 == -- ]] && shift; print -l -- \"$@\"; }; "
             f"source {script}; words=({words}); CURRENT={len(typed)}; _pbem"],
            capture_output=True, text=True, check=True, timeout=30)
        got = {w for w in done.stdout.splitlines() if w.startswith(typed[-1])}
        assert got == offered, typed


def test_every_level_of_the_parser_is_in_the_table() -> None:
    table = levels(build_parser())
    assert {"pbem", "pbem db", "pbem dkim", "pbem dkim keygen", "pbem completion"} <= set(table)
    assert table["pbem"].valued["--config"] == []
    assert table["pbem dkim keygen"].valued["--bits"] == ["1024", "2048", "3072", "4096"]
