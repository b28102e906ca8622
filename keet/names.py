"""Kernel names: what the readers, the model's static analysis and validation all need to say
which function a profiled or compiled kernel is. Standard library only, so that perfmodel can
use it without loading a reader."""

from __future__ import annotations


def function_base_name(name: str) -> str:
    """The bare function name of a demangled kernel name.

    "void ns::kern<float, 4>(int, T2)" -> "kern"; "copy_blocked[v1,...](Array<...>)" -> "copy_blocked".
    A heuristic: cut the parameter list (the first "(" outside <...> and [...]), drop
    template arguments and [...] suffixes, the return type and the namespaces.
    """
    # ncu 2023+ writes "operator ()" (a space): joined, so that the "()" is not taken as the
    # name; "->" (a lambda's return type) closes no template bracket.
    text = name.strip().replace("(anonymous namespace)", "<unnamed>").replace("operator ()", "operator()").replace("->", "→")
    head = _before_parameter_list(text)
    outer = _without_brackets(head).split()
    base = [part for part in outer[-1].split("::") if part] if outer else []
    return base[-1] if base else (text or name)


def _before_parameter_list(text: str) -> str:
    depth = 0
    for index, char in enumerate(text):
        if char in "<[":
            depth += 1
        elif char in ">]":
            depth = max(depth - 1, 0)
        elif char == "(" and depth == 0:
            if text[:index].rstrip().endswith("operator") and text[index : index + 2] == "()":
                continue  # "operator()" is a name, its "(" opens no parameter list
            return text[:index]
    return text


def _without_brackets(text: str) -> str:
    depth = 0
    kept = []
    for char in text:
        if char in "<[":
            depth += 1
        elif char in ">]":
            depth = max(depth - 1, 0)
        elif depth == 0:
            kept.append(char)
    return "".join(kept)
