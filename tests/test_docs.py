"""Docs stay in step with the CLI: every command has help and is in both READMEs."""

from pathlib import Path

import pytest

from docindex.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = sorted(cli.commands)


@pytest.mark.parametrize("name", COMMANDS)
def test_command_has_help(name: str) -> None:
    command = cli.commands[name]
    assert command.help and command.help.strip()
    for param in command.params:
        if param.param_type_name == "option" and not getattr(param, "hidden", False):
            assert getattr(param, "help", None), f"{name} {param.name} lacks help"


@pytest.mark.parametrize("name", COMMANDS)
def test_command_is_documented(name: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"docindex {name}" in readme


def test_readme_starts_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [b.split("```")[0] for b in text.split("```sh\n")[1:3]]
    assert "pip install ." in blocks[0] and "docindex scan" in blocks[0]
    assert "docindex query" in blocks[0]
    assert "pip install '.[test]'" in blocks[1] and "python -m pytest" in blocks[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -q '.[test]' && python -m pytest" in ci


def test_chinese_readme_is_real() -> None:
    text = (ROOT / "README.zh.md").read_text(encoding="utf-8")
    assert len(text) > 3000 and "安装" in text and "检索" in text
