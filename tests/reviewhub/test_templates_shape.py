"""The templates stay readable: no line of any project template is longer than 160 characters."""

from pathlib import Path

from django.conf import settings

LIMIT = 160


def project_templates() -> list[Path]:
    """Every template of the project: the templates folder and each of our apps' own (not installed packages')."""
    root = Path(settings.BASE_DIR)
    folders = [Path(d) for d in settings.TEMPLATES[0]["DIRS"]] + sorted(root.glob("*/templates"))
    return sorted({path for folder in folders for path in folder.rglob("*.html")})


def test_the_templates_are_found():
    names = {path.relative_to(settings.BASE_DIR).as_posix() for path in project_templates()}
    assert "templates/approvals/run.html" in names and "practice/templates/practice/catch_rate.html" in names


def test_no_template_line_is_longer_than_160_characters():
    long_lines = [
        f"{path.relative_to(settings.BASE_DIR)}:{number}: {len(line)} characters"
        for path in project_templates()
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if len(line) > LIMIT
    ]
    assert long_lines == []
