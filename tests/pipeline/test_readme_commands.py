"""Every command README.md and the reference in docs/ show is one the project has: each `python -m pipeline.cli ...`
(or `tradelab ...`) line of a code block or an inline code span parses with the CLI's real
argument parser (nothing runs), every `make TARGET` shown is a target of the Makefile, and every
`dagster asset|job` line names assets and jobs of the code location."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = re.compile(r"(?:python -m pipeline\.cli|\btradelab)\s+(?P<args>[^`#\n]*)")


def _code_lines(text: str) -> list[str]:
    """The lines of fenced code blocks (continuations joined) and the inline code spans."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            if lines and lines[-1].endswith("\\"):
                lines[-1] = lines[-1][:-1] + " " + line.strip()
            else:
                lines.append(line)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    return lines + inline


def _command_names() -> set[str]:
    from pipeline.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "cmd")
    return set(sub.choices)


def readme_cli_commands(text: str) -> list[str]:
    """The argument strings of every CLI command shown (optional parts `[--flag X]` kept,
    their brackets dropped; a `# comment` dropped): lines that call `python -m pipeline.cli`
    or `tradelab`, and inline spans such as `prune-runs [--older-than-days N]` that start
    with a command's name and give a flag."""
    out, names = [], _command_names()
    for line in _code_lines(text):
        found = [m.group("args") for m in CLI.finditer(line)]
        if not found and line.split(" ", 1)[0] in names and "--" in line:
            found = [line]
        out += [re.sub(r"[\[\]]", "", args).strip() for args in found if args.strip()]
    return out


def readme_make_targets(text: str) -> set[str]:
    return {m.group(1) for line in _code_lines(text) for m in re.finditer(r"^(?:\S+=\S+\s+)*make ([a-z][\w-]*)", line.strip())}


PLACEHOLDERS = {"N": "3"}  # a number the reader chooses (`prune-runs --older-than-days N`)
README_TEXT = (REPO / "README.md").read_text()
DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
DOCS_TEXT = "\n".join(p.read_text() for p in DOC_FILES)  # the README and every file of docs/
COMMANDS = readme_cli_commands(DOCS_TEXT)
JOBS_DOC = REPO / "docs" / "commands.md"


def _parse(args: str):
    from pipeline.cli import build_parser
    from pipeline.cli.experiments import take_experiment_flag

    words = [PLACEHOLDERS.get(a, a) for a in shlex.split(args) if a != "--verbose"]
    argv, _ = take_experiment_flag(words)
    return build_parser().parse_args(argv)


def test_the_readme_shows_the_commands_this_test_reads():
    assert len(COMMANDS) >= 25
    assert "grid-search --market-data DIR --trade-log FILE --out FILE" in COMMANDS  # an inline span
    assert "build-features --raw FOLDER --symbols A,B --years 2000-2010" in COMMANDS  # [optional] flags kept


@pytest.mark.parametrize("args", COMMANDS)
def test_readme_cli_command_parses(args):
    try:
        parsed = _parse(args)
    except SystemExit as stop:
        pytest.fail(f"README.md or docs/ show `python -m pipeline.cli {args}`, which the CLI refuses (exit {stop.code})")
    assert callable(parsed.func)


def test_a_command_the_cli_does_not_have_is_caught():
    assert readme_cli_commands("```bash\npython -m pipeline.cli build-feature --years 2010  # typo\n```") == [
        "build-feature --years 2010"]
    with pytest.raises(SystemExit):
        _parse("build-feature --years 2010")
    with pytest.raises(SystemExit):
        _parse("grid-search --engine fast")


def test_every_make_target_the_readme_shows_exists():
    assert {"demo", "test", "ui"} <= readme_make_targets(README_TEXT)  # the front page's commands
    shown = readme_make_targets(DOCS_TEXT)
    assert {"demo", "test", "ui", "gpu-check"} <= shown
    defined = set(re.findall(r"^([a-z][\w-]*):", (REPO / "Makefile").read_text(), flags=re.M))
    assert shown <= defined, f"README.md or docs/ show make targets the Makefile lacks: {sorted(shown - defined)}"


def test_every_dagster_command_the_readme_shows_names_assets_and_jobs_of_the_code_location():
    """`dagster asset materialize -m pipeline.definitions --select A,B` and `dagster job execute
    -j JOB` lines: the assets and jobs exist in pipeline.definitions (nothing runs)."""
    from pipeline.definitions import defs

    lines = [line for line in _code_lines(DOCS_TEXT) if re.search(r"\bdagster (asset|job) ", line)
             and "-m pipeline.definitions" in line]
    assert len(lines) >= 3
    assets = {key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys()}
    for line in lines:
        words = shlex.split(line.split("#", 1)[0])
        if "--select" in words:
            selected = set(words[words.index("--select") + 1].split(","))
            assert selected <= assets, f"README.md or docs/: {line.strip()!r} selects unknown assets {sorted(selected - assets)}"
        if "-j" in words:
            defs.resolve_job_def(words[words.index("-j") + 1])  # raises for an unknown job


def test_the_jobs_table_lists_the_jobs_of_the_code_location():
    from pipeline.definitions import defs

    section = JOBS_DOC.read_text().split("## Jobs: the whole graph as a chain", 1)[1].split("\n## ", 1)[0]
    shown = re.findall(r"^\| `(\w+)`", section, flags=re.M)
    assert len(shown) >= 8
    for job in shown:
        defs.resolve_job_def(job)  # raises for an unknown job
