"""A build where nothing changed stops before importing torch (codegen/uptodate.py) only when
neither its stamp's digests nor ninja see a change. Here with a real ninja on a build file of
one step whose input lies outside every folder the digests cover (as torch's headers do), so
only ninja can see it change; the project has no link of its own to run again, so what is not
up to date needs the full build (None). The build without torch of an edited registry, and the
build API's use of both, end to end: tests/test_install.py."""
from __future__ import annotations

import os
import subprocess

import pytest

from mpsgen.codegen import ninja_build, uptodate
from mpsgen.codegen.package import Project

pytestmark = pytest.mark.quick  # bash test.sh --quick (tests/conftest.py)

ARGV = ["--quiet", "build_ext", "--inplace"]


@pytest.fixture
def built(tmp_path, monkeypatch):
    """A project built once: generated/ with one file, a ninja build whose input is a header
    outside the project, and the stamp a successful build leaves."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.mpsgen]\npackage = "pkg"\n')
    project = Project(tmp_path, "pkg", tmp_path / "ops.yaml", tmp_path / "pkg" / "generated", "pkg")
    project.generated.mkdir(parents=True)
    (project.generated / "op.metal").write_text("// an op\n")
    header = tmp_path / "elsewhere" / "header.h"
    header.parent.mkdir()
    header.write_text("// a header\n")
    ninja_dir = tmp_path / "build" / "temp"
    ninja_dir.mkdir(parents=True)
    (ninja_dir / "build.ninja").write_text(f"rule copy\n  command = cp $in $out\nbuild out.o: copy {header}\n")
    subprocess.run(ninja_build.ninja_command(), cwd=ninja_dir, check=True, capture_output=True)
    uptodate.remember(project, ARGV, str(ninja_dir))
    return project, header


def fresh(project, argv=ARGV) -> bool:
    return uptodate.build_without_torch(project, argv) == "up to date"


def test_nothing_changed_is_up_to_date(built):
    project, _ = built
    assert fresh(project)


def test_a_header_only_ninja_sees_makes_it_stale(built):
    project, header = built
    st = header.stat()
    os.utime(header, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert not fresh(project)


def test_a_generated_file_changed_makes_it_stale(built):
    project, _ = built
    (project.generated / "op.metal").write_text("// an op, edited\n")
    assert not fresh(project)


def test_the_extension_removed_or_replaced_makes_it_stale(built):
    project, _ = built
    ext = project.root / "pkg" / "_C.so"
    ext.write_text("an extension")
    assert not fresh(project)


def test_a_build_setting_in_the_environment_makes_it_stale(built, monkeypatch):
    project, _ = built
    monkeypatch.setenv("MPSGEN_CPU_VARIANTS", "avx2")
    assert not fresh(project)
    monkeypatch.setenv("CXXFLAGS", "-O0")
    assert not fresh(project)


def test_another_command_line_is_not_fresh(built):
    project, _ = built
    assert not fresh(project, ["build_ext"])


def test_a_forced_build_or_another_command_is_never_fresh(built):
    project, _ = built
    for argv in (["--quiet", "build_ext", "--inplace", "--force"], ["build_ext", "-f"], ["bdist_wheel"],
                 ["build_ext", "--inplace", "install"], ["clean"]):
        uptodate.remember(project, argv, str(project.root / "build" / "temp"))  # even after it ran
        assert not fresh(project, argv), argv


def test_a_build_that_starts_forgets_until_it_succeeds(built):
    project, _ = built
    uptodate.forget(project)
    assert not fresh(project)
    (project.root / "build" / uptodate.STAMP).write_text("{not json")
    assert not fresh(project)
