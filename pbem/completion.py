"""Shell completion for the ``pbem`` command: `pbem completion bash|zsh|fish` prints a
script written from the command line's own parser, so it offers exactly the commands,
options and choices of this pbem (a new command is offered without a change here).

Each script holds the same table, one row a level of the command line ("pbem",
"pbem db", "pbem dkim keygen"): the words that may come next (subcommands and the
choices of arguments), its options, and which options take a value (with their
choices, if any). A small walk over the words typed so far finds the level.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

__all__ = ["SHELLS", "script"]

SHELLS = ("bash", "zsh", "fish")


@dataclass
class Level:
    """What may follow at one level of the command line."""

    commands: list[str] = field(default_factory=list)   # each opens a level of its own
    words: list[str] = field(default_factory=list)      # commands and the arguments' choices
    options: list[str] = field(default_factory=list)
    valued: dict[str, list[str]] = field(default_factory=dict)   # option: its choices


def levels(parser: argparse.ArgumentParser, name: str = "pbem") -> dict[str, Level]:
    """Every level of ``parser``'s command line, by its words ("pbem db")."""
    level, found = Level(), {}
    for action in parser._actions:   # argparse has no public way to list them
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                level.commands.append(command)
                level.words.append(command)
                found.update(levels(sub, f"{name} {command}"))
        elif action.option_strings:
            level.options.extend(action.option_strings)
            if action.nargs != 0:   # not a flag: the next word is its value
                for option in action.option_strings:
                    level.valued[option] = [str(c) for c in action.choices or ()]
        elif action.choices:
            level.words.extend(str(c) for c in action.choices)
    return {name: level, **found}


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script for ``shell`` (one of SHELLS)."""
    table = levels(parser)
    if shell == "fish":
        return _FISH.format(levels=_fish_levels(table), choices=_fish_choices(table))
    cases = "\n".join(
        f"        '{name}') _subs='{' '.join(level.commands)}' _next='{' '.join(level.words)}'"
        f" _opts='{' '.join(level.options)}' _valued='{' '.join(level.valued)}' ;;"
        for name, level in table.items())
    choices = "\n".join(
        f"        '{name} {option}') _choices='{' '.join(values)}' ;;"
        for name, level in table.items() for option, values in level.valued.items() if values)
    return (_BASH if shell == "bash" else _ZSH).format(cases=cases, choices=choices)


def _fish_levels(table: dict[str, Level]) -> str:
    return "\n".join(
        f"        case '{name}'\n"
        f"            set -g __pbem_subs {' '.join(level.commands)}\n"
        f"            set -g __pbem_next {' '.join(level.words)}\n"
        f"            set -g __pbem_opts {' '.join(level.options)}\n"
        f"            set -g __pbem_valued {' '.join(level.valued)}"
        for name, level in table.items())


def _fish_choices(table: dict[str, Level]) -> str:
    return "\n".join(
        f"        case '{name} {option}'\n            printf '%s\\n' {' '.join(values)}"
        for name, level in table.items() for option, values in level.valued.items() if values)


# The level table and the choices of valued options, then the walk. An option that takes
# a value and has no choices (a file, a number) leaves the value to the shell's own
# completion (file names).
_TABLE = """\
_pbem_level() {{
    case "$1" in
{cases}
    esac
}}

_pbem_choices() {{
    case "$1" in
{choices}
        *) return 1 ;;
    esac
}}
"""

_BASH = "# pbem completion for bash: source <(pbem completion bash)\n" + _TABLE + """
_pbem() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" level=pbem word i skip=""
    local _subs _next _opts _valued _choices
    _pbem_level "$level"
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        if [[ -n $skip ]]; then skip=""; continue; fi
        if [[ " $_valued " == *" $word "* ]]; then skip=1; continue; fi
        if [[ " $_subs " == *" $word "* ]]; then level="$level $word"; _pbem_level "$level"; fi
    done
    COMPREPLY=()
    if [[ -n $skip ]]; then
        if _pbem_choices "$level ${{COMP_WORDS[COMP_CWORD-1]}}"; then
            COMPREPLY=($(compgen -W "$_choices" -- "$cur"))
        fi
    elif [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$_opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$_next" -- "$cur"))
    fi
}}

complete -o default -F _pbem pbem
"""

_ZSH = """#compdef pbem
# pbem completion for zsh: source <(pbem completion zsh), or save it as _pbem in a
# folder of $fpath
""" + _TABLE + """
_pbem() {{
    local level=pbem word i skip=""
    local _subs _next _opts _valued _choices
    _pbem_level "$level"
    for ((i = 2; i < CURRENT; i++)); do
        word=${{words[i]}}
        if [[ -n $skip ]]; then skip=""; continue; fi
        if [[ " $_valued " == *" $word "* ]]; then skip=1; continue; fi
        if [[ " $_subs " == *" $word "* ]]; then level="$level $word"; _pbem_level "$level"; fi
    done
    if [[ -n $skip ]]; then
        if _pbem_choices "$level ${{words[CURRENT-1]}}"; then
            compadd -- ${{=_choices}}
        else
            _files
        fi
    elif [[ ${{words[CURRENT]}} == -* ]]; then
        compadd -- ${{=_opts}}
    else
        compadd -- ${{=_next}}
    fi
}}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _pbem "$@"
else
    compdef _pbem pbem
fi
"""

_FISH = """# pbem completion for fish: pbem completion fish > ~/.config/fish/completions/pbem.fish
function __pbem_level
    switch "$argv[1]"
{levels}
    end
end

function __pbem_choices
    switch "$argv[1]"
{choices}
        case '*'
            return 1
    end
end

function __pbem_complete
    set -l tokens (commandline -opc)
    set -l level pbem
    set -l skip
    __pbem_level $level
    for word in $tokens[2..-1]
        if test -n "$skip"
            set skip
            continue
        end
        if contains -- $word $__pbem_valued
            set skip 1
            continue
        end
        if contains -- $word $__pbem_subs
            set level "$level $word"
            __pbem_level $level
        end
    end
    set -l cur (commandline -ct)
    if test -n "$skip"
        __pbem_choices "$level $tokens[-1]"; or __fish_complete_path $cur
    else if string match -q -- '-*' $cur
        printf '%s\\n' $__pbem_opts
    else
        printf '%s\\n' $__pbem_next
    end
end

complete -c pbem -f -a '(__pbem_complete)'
"""
