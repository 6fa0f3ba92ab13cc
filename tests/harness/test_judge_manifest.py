"""Manifest of the judge's fixed parts: the committed one matches the package; any change is detected."""
import shutil

from ssmkit.harness.manifest import check_manifest, compute_manifest, fixed_files, package_dir, write_manifest


def test_committed_manifest_matches_the_package():
    # Fails after a fixed file changes until `python -m ssmkit.harness.manifest --write` is run and committed.
    assert check_manifest() == []


def test_manifest_covers_the_references_and_the_whole_harness():
    files = set(fixed_files(package_dir()))
    assert {"harness/judge.py", "harness/worker.py", "harness/compare.py", "harness/workloads.py",
            "granite/reference.py", "mamba3/reference.py"} <= files
    assert "granite/layer.py" not in files and "mamba3/op.py" not in files  # fast paths are not fixed parts


def test_changed_missing_and_unlisted_files_are_reported(tmp_path):
    root = tmp_path / "ssmkit"
    shutil.copytree(package_dir(), root, ignore=shutil.ignore_patterns("__pycache__"))
    write_manifest(root)
    assert check_manifest(root) == []
    (root / "harness" / "compare.py").write_text((root / "harness" / "compare.py").read_text() + "\n# edit\n")
    (root / "granite" / "reference.py").unlink()
    (root / "harness" / "extra.py").write_text("x = 1\n")
    assert check_manifest(root) == [
        "granite/reference.py: missing",
        "harness/compare.py: changed (sha256 differs from the manifest)",
        "harness/extra.py: not in the manifest",
    ]


def test_unreadable_or_empty_manifest_is_a_problem(tmp_path):
    assert check_manifest(tmp_path)[0].startswith("cannot read the manifest")
    assert check_manifest(tmp_path, manifest={"files": {}}) == ["the manifest lists no files"]
    assert compute_manifest(tmp_path) == {"files": {}}
