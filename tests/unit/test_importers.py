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
        "via_target.py": "import torch\nfrom models.target import center\n",
        "unrelated.py": "import torch\nfrom models.target import other\n",
    }
    assert _reached(tmp_path, files, (7, 8)) == [
        "models/module_from_package.py",
        "models/module_object.py",
        "models/star.py",
        "models/uses_alias.py",
        "models/uses_center.py",
        "models/uses_wrap.py",
        "models/via_target.py",
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


# A review's cases: each file below runs the edited ``center`` (lines 7-8) in a way only a
# conservative reading sees. Each is a workspace of its own: (helpers.py, the importer).
REACHING = {
    "a registry filled at import": (
        HELPERS + "HANDLERS = {}\nHANDLERS['c'] = center\n\n\ndef dispatch(k, x):\n"
        "    return HANDLERS[k](x)\n",
        "from models.helpers import dispatch\n",
    ),
    "a list appended at import": (
        HELPERS + "PASSES = []\nPASSES.append(center)\n",
        "from models.helpers import PASSES\n",
    ),
    "a class attribute set at import": (
        HELPERS + "Norm.center = staticmethod(center)\n",
        "from models.helpers import Norm\n",
    ),
    "a registering decorator": (
        HELPERS.replace("def center(x):", "@register\ndef center(x):").replace(
            "import torch\n",
            "import torch\nREG = {}\n\n\ndef register(f):\n    REG[f.__name__] = f\n    return f\n",
        ),
        "from models.helpers import REG\n",
    ),
    "a module-level call": (
        HELPERS + "RESULT = center(1)\n",
        "from models.helpers import untouched\n",
    ),
    "locals()": (HELPERS + "FUNCS = locals()\n", "from models.helpers import FUNCS\n"),
    "a module __getattr__": (
        HELPERS + "\n\ndef __getattr__(name):\n    return center\n",
        "from models.helpers import fast_center\n",
    ),
    "the package's attribute": (
        HELPERS,
        "from models.helpers import untouched\nimport models\n\n\ndef f():\n"
        "    return models.helpers.center(1)\n",
    ),
    "an import by a string": (
        HELPERS,
        "import importlib\nh = importlib.import_module('models.helpers')\n",
    ),
    "a file this Python cannot parse": (
        HELPERS,
        "from models.helpers import center\ntype Vec = list[float]\nx = f'{1 if True else 2'\n",
    ),
}


@pytest.mark.parametrize("case", list(REACHING))
def test_uses_only_a_conservative_reading_sees_are_counted(tmp_path: Path, case: str) -> None:
    helpers, user = REACHING[case]
    assert _reached(tmp_path, {"user.py": user}, (7, 8), helpers) == ["models/user.py"]


def test_a_function_of_the_analysed_file_that_calls_the_helper_carries_it_on(
    tmp_path: Path,
) -> None:
    pkg = _workspace(tmp_path, {})
    (pkg / "target.py").write_text(
        "from models.helpers import center\n\n\ndef wrap(x):\n    return center(x)\n\n\n"
        "def other(x):\n    return x\n"
    )
    (pkg / "uses_wrap.py").write_text("from models.target import wrap\n")
    (pkg / "uses_other.py").write_text("from models.target import other\n")
    (pkg / "deeper.py").write_text("from models.uses_wrap import wrap as w\n")
    found = importers(tmp_path, [], str(pkg / "helpers.py"), (7, 8), skip=str(pkg / "target.py"))
    assert sorted(found) == ["models/deeper.py", "models/uses_wrap.py"]


def test_a_package_init_is_imported_by_its_folders_name(tmp_path: Path) -> None:
    pkg = _workspace(
        tmp_path,
        {"user.py": "from models import center\n", "other.py": "from models import untouched\n"},
    )
    (pkg / "__init__.py").write_text(HELPERS)
    found = importers(tmp_path, [], str(pkg / "__init__.py"), (7, 8), skip=str(pkg / "target.py"))
    assert "models/user.py" in found and "models/other.py" not in found


def test_pathological_files_do_not_raise(tmp_path: Path) -> None:
    deep = "T = " + "+".join(["1"] * 20000) + "\n"
    pkg = _workspace(tmp_path, {"deep.py": deep + "from models.helpers import center\n"})
    (pkg / "loop.py").symlink_to(pkg / "loop.py")
    assert "models/deep.py" in importers(
        tmp_path, [], str(pkg / "helpers.py"), (7, 8), skip=str(pkg / "target.py")
    )
    (pkg / "helpers.py").write_text(deep + HELPERS)
    assert changed_names(deep + HELPERS, 8, 9) is None
