"""Which other files an edit of a helper module reaches (engine/importers.py): a file that
imports only names the edit leaves alone is not held against the fix; anything else is."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from dynamo_lens.engine.importers import changed_names, importers

HELPERS = textwrap.dedent(
    """\
    import torch

    SCALE = 2.0


    def center(x):
        if x.mean() > 0:  # line 7: the edit
            x = x - x.mean()
        return x


    def wrap(x):
        return center(x) * SCALE


    alias = center


    class Norm:
        def forward(self, x):
            return x / x.norm()  # line 21: an edit in a method


    def untouched(x):
        return x + 1
    """
)


def _workspace(tmp_path: Path, importers_src: dict[str, str], helpers: str = HELPERS) -> Path:
    pkg = tmp_path / "models"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(helpers)
    (pkg / "target.py").write_text("from models.helpers import center\n")
    for name, text in importers_src.items():
        (pkg / name).write_text(text)
    return pkg


def _reached(
    tmp_path: Path, files: dict[str, str], lines: tuple[int, int], helpers: str = HELPERS
) -> list[str]:
    pkg = _workspace(tmp_path, files, helpers)
    return sorted(
        importers(tmp_path, [], str(pkg / "helpers.py"), lines, skip=str(pkg / "target.py"))
    )


def test_changed_names_follow_uses_within_the_module() -> None:
    assert changed_names(HELPERS, 7, 8) == {"center", "wrap", "alias"}
    assert changed_names(HELPERS, 21, 21) == {"Norm"}


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        (HELPERS, (3, 3)),  # module level: runs at import
        ("def f(x=print('hi')):\n    return x\n", (1, 1)),  # a default value
        ("class C:\n    size = 3\n    def f(self):\n        return 1\n", (2, 2)),  # a class body
        ("def f(x):\n    return x\n\ng = globals()['f']\n", (2, 2)),  # looked up by name
    ],
)
def test_code_that_runs_at_import_or_is_looked_up_reaches_every_importer(
    source: str, lines: tuple[int, int]
) -> None:
    assert changed_names(source, *lines) is None


def test_only_importers_of_the_changed_names_are_reached(tmp_path: Path) -> None:
    files = {
        "uses_untouched.py": "from models.helpers import untouched, Norm\n",
        "uses_center.py": "from models.helpers import center\n",
        "uses_wrap.py": "from models.helpers import wrap as w\n",
        "uses_alias.py": "from .helpers import alias\n",
        "relative_untouched.py": "from .helpers import untouched\n",
        "module_object.py": "import models.helpers\n",
        "module_from_package.py": "from models import helpers\n",
        "star.py": "from models.helpers import *\n",
        "unrelated.py": "import torch\nfrom models.target import center\n",
    }
    assert _reached(tmp_path, files, (7, 8)) == [
        "models/module_from_package.py",
        "models/module_object.py",
        "models/star.py",
        "models/uses_alias.py",
        "models/uses_center.py",
        "models/uses_wrap.py",
    ]


def test_an_edit_in_a_method_reaches_importers_of_its_class(tmp_path: Path) -> None:
    files = {
        "uses_norm.py": "from models.helpers import Norm\n",
        "uses_center.py": "from models.helpers import center\n",
    }
    assert _reached(tmp_path, files, (21, 21)) == ["models/uses_norm.py"]


def test_an_edit_at_import_time_reaches_every_importer(tmp_path: Path) -> None:
    files = {
        "uses_untouched.py": "from models.helpers import untouched\n",
        "unrelated.py": "import torch\n",
    }
    assert _reached(tmp_path, files, (3, 3)) == ["models/uses_untouched.py"]
