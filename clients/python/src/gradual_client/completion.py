"""Shell completion scripts for ``gradual``, generated from its argparse parser (``gradual completion bash``):
the commands, their subcommands, options and fixed choices, for bash, zsh (bash's script through
``bashcompinit``) and fish. Nothing to install: ``eval "$(gradual completion bash)"``."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass, field

SHELLS = ("bash", "zsh", "fish")


@dataclass
class Node:
    """One command (the path of words after ``gradual``): its options, subcommands and positional choices."""

    path: tuple[str, ...]
    help: str = ""
    options: list[tuple[list[str], str, list[str]]] = field(default_factory=list)  # (flags, help, choices)
    commands: dict[str, str] = field(default_factory=dict)  # name -> help
    choices: list[str] = field(default_factory=list)


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = (), help: str = "") -> Iterator[Node]:
    node = Node(path, help)
    children = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                node.commands[name] = helps.get(name, "")
                children.append((sub, (*path, name), helps.get(name, "")))
        elif action.option_strings:
            if action.help != argparse.SUPPRESS:
                node.options.append((list(action.option_strings), (action.help or "").replace("%%", "%"),
                                     [str(c) for c in action.choices or ()]))
        elif action.choices:
            node.choices += [str(c) for c in action.choices]
    yield node
    for sub, sub_path, sub_help in children:
        yield from walk(sub, sub_path, sub_help)


def _words(node: Node) -> str:
    return " ".join([*node.commands, *node.choices, *(flag for flags, _, _ in node.options for flag in flags)])


def bash(parser: argparse.ArgumentParser) -> str:
    prog = parser.prog
    nodes = list(walk(parser))
    known = "|".join(f'"{" ".join(n.path)}"' for n in nodes if n.path)
    lines = [
        f"# bash completion for {prog}: eval \"$({prog} completion bash)\" (e.g. in ~/.bashrc)",
        f"_{prog}_complete() {{",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" path="" word i',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        word="${COMP_WORDS[i]}"',
        '        case "$word" in -*) continue ;; esac',
        '        case "${path:+$path }$word" in',
        f'            {known}) path="${{path:+$path }}$word" ;;',
        "        esac",
        "    done",
        '    local words=""',
        '    case "$path" in',
    ]
    for node in nodes:
        lines.append(f'        "{" ".join(node.path)}") words="{_words(node)}" ;;')
    lines.append("    esac")
    choices = [(flags, values) for node in nodes for flags, _, values in node.options if values]
    if choices:
        lines.append('    case "$prev" in')
        seen: set[str] = set()
        for flags, values in choices:
            fresh = [f for f in flags if f not in seen]
            seen.update(fresh)
            if fresh:
                lines.append(f'        {"|".join(fresh)}) words="{" ".join(values)}" ;;')
        lines.append("    esac")
    lines += [
        '    COMPREPLY=($(compgen -W "$words" -- "$cur"))',
        "}",
        f"complete -o default -F _{prog}_complete {prog}",
        "",
    ]
    return "\n".join(lines)


def zsh(parser: argparse.ArgumentParser) -> str:
    prog = parser.prog
    return "\n".join([
        f"# zsh completion for {prog}: eval \"$({prog} completion zsh)\" (e.g. in ~/.zshrc)",
        "(( $+functions[compdef] )) || { autoload -U +X compinit && compinit }",
        "autoload -U +X bashcompinit && bashcompinit",
        bash(parser).split("\n", 1)[1],
    ])


def _fish_text(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish(parser: argparse.ArgumentParser) -> str:
    prog = parser.prog
    nodes = list(walk(parser))
    lines = [f"# fish completion for {prog}: {prog} completion fish > ~/.config/fish/completions/{prog}.fish"]
    for node in nodes:
        if not node.path:
            condition = "__fish_use_subcommand"
        else:
            condition = " ; and ".join(f"__fish_seen_subcommand_from {word}" for word in node.path)
            if node.commands:
                condition += f" ; and not __fish_seen_subcommand_from {' '.join(node.commands)}"
        for name, help in node.commands.items():
            lines.append(f"complete -c {prog} -n {_fish_text(condition)} -a {name} -d {_fish_text(help)}")
        if node.choices:
            lines.append(f"complete -c {prog} -n {_fish_text(condition)} -a {_fish_text(' '.join(node.choices))}")
        for flags, help, values in node.options:
            spec = " ".join(f"-l {f[2:]}" if f.startswith("--") else f"-s {f[1:]}" for f in flags)
            extra = f" -x -a {_fish_text(' '.join(values))}" if values else ""
            lines.append(f"complete -c {prog} -n {_fish_text(condition)} {spec} -d {_fish_text(help)}{extra}")
    return "\n".join(lines) + "\n"


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` for ``shell`` (bash, zsh or fish)."""
    makers = {"bash": bash, "zsh": zsh, "fish": fish}
    if shell not in makers:
        raise ValueError(f"no completion for {shell}: bash, zsh or fish")
    return makers[shell](parser)
