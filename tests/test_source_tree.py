"""The source tree is the installed tree (issue #29 item 5): the bundled robots
(``dyn_plugin/bundled``) and the validation suites (``dyn_plugin/tools/suites``) live inside
the package and are found beside the code, the same from a checkout, an editable install and
a wheel.

A copy of the package on PYTHONPATH must find its own files even beside an editable install
of another tree: with the old package-dir remaps (``urdf`` -> ``dyn_plugin.bundled``) the
editable install's finder answered for ``dyn_plugin.bundled`` and the copy read, and
``dyn-plugin robots --regenerate`` wrote, the other tree.  A wheel carries what
pyproject.toml's packages and package-data name: every data file under ``dyn_plugin/`` must
be named there (building a wheel takes too long for the suite; the README's install section
shows the wheel run).
"""

import fnmatch
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dyn_plugin
from dyn_plugin.datafile import read_toml
from dyn_plugin.robots import bundled_dir
from dyn_plugin.tools.validate import suite_dir

ROOT = Path(dyn_plugin.__file__).resolve().parent.parent
PACKAGE = ROOT / "dyn_plugin"
CACHES = ("__pycache__", "*.nbi", "*.nbc", "*.pyc")     # numba's and python's caches, not sources


def test_robots_and_suites_are_found_inside_the_package():
    assert bundled_dir() == PACKAGE / "bundled" and suite_dir() == PACKAGE / "tools" / "suites"
    assert sorted(p.stem for p in bundled_dir().glob("*.urdf")) == dyn_plugin.list_robots()
    assert (suite_dir() / "default.toml").is_file()


def test_a_copy_on_pythonpath_finds_its_own_robots_and_suites(tmp_path):
    """A second checkout (a copy of the package) imported through PYTHONPATH, run from
    elsewhere, reads the robots and suites beside its own code."""
    checkout = tmp_path / "checkout"
    shutil.copytree(PACKAGE, checkout / "dyn_plugin", ignore=shutil.ignore_patterns(*CACHES))
    code = ("import json, dyn_plugin, dyn_plugin.robots as r, dyn_plugin.tools.validate as v; "
            "print(json.dumps([dyn_plugin.__file__, str(r.bundled_dir()), str(v.suite_dir()), r.list_robots()]))")
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    module, robots, suites, names = json.loads(out)
    package = (checkout / "dyn_plugin").resolve()
    assert Path(module).resolve() == package / "__init__.py"
    assert Path(robots).resolve() == package / "bundled" and Path(suites).resolve() == package / "tools" / "suites"
    assert names == dyn_plugin.list_robots()


def _setuptools_config() -> dict:
    return read_toml(ROOT / "pyproject.toml", ValueError, "pyproject")["tool"]["setuptools"]


def test_no_package_dir_remaps_and_every_package_is_found():
    config = _setuptools_config()
    assert "package-dir" not in config, "the installed tree must be the source tree (no remaps)"
    include = config["packages"]["find"]["include"]
    packages = {".".join(p.parent.relative_to(ROOT).parts) for p in PACKAGE.rglob("__init__.py")}
    assert {"dyn_plugin.bundled", "dyn_plugin.tools.suites"} <= packages
    missed = sorted(p for p in packages if not any(fnmatch.fnmatch(p, pattern) for pattern in include))
    assert not missed, f"packages a wheel would leave out: {missed}"


def test_every_data_file_in_the_package_is_package_data():
    """Every file under dyn_plugin/ that is not Python (nor a cache) is matched by the
    package-data patterns of its package, so the wheel carries it."""
    data = _setuptools_config()["package-data"]
    files = [p for p in PACKAGE.rglob("*") if p.is_file() and p.suffix != ".py"
             and not any(fnmatch.fnmatch(part, pattern) for part in p.relative_to(PACKAGE).parts for pattern in CACHES)]
    assert any(p.suffix == ".urdf" for p in files) and any(p.parent == suite_dir() for p in files)
    missed = [str(p.relative_to(ROOT)) for p in files
              if not any(fnmatch.fnmatch(p.name, pattern)
                         for pattern in data.get(".".join(p.parent.relative_to(ROOT).parts), ()))]
    assert not missed, f"data files a wheel would leave out (add them to package-data): {missed}"
