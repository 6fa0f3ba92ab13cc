"""Make a renamed copy of another commit's ``ssmkit`` package, for same-process A/Bs of whole code versions.

``git archive COMMIT src/ssmkit`` is unpacked into ``OUT/NAME`` and every ``ssmkit`` import inside it is rewritten
to ``NAME``, so the copy imports itself and never the working tree's package (its own FastMambaLayer, MambaCache,
harness and kernels: a layer's fast paths check its own package's types). The A/B scripts then load it with
``OUT`` on ``sys.path``. Copies belong in the git-ignored ``bench/_ab/`` (carried to the GPU machine with the
device tool's ``carry``); nothing here is committed.
Usage: python bench/ab_package.py --commit fc5a9b6 --name ssmkit_s7 [--out bench/_ab/pkgs]
"""
import argparse
import io
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

_IMPORT = re.compile(r"\b(from|import)\s+ssmkit\b")
_DOTTED = re.compile(r"([\"'])ssmkit\.")


def make_copy(commit: str, name: str, out: Path) -> Path:
    """Unpack ``commit``'s src/ssmkit as ``out/name`` with its imports renamed; returns the package directory."""
    data = subprocess.run(["git", "archive", commit, "src/ssmkit"], check=True, capture_output=True).stdout
    dest = out / name
    if dest.exists():
        shutil.rmtree(dest)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            rel = Path(member.name).relative_to("src/ssmkit")
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            body = tar.extractfile(member).read()
            if target.suffix == ".py":
                text = _IMPORT.sub(lambda m: f"{m.group(1)} {name}", body.decode())
                body = _DOTTED.sub(lambda m: f"{m.group(1)}{name}.", text).encode()
            target.write_bytes(body)
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commit", required=True)
    ap.add_argument("--name", required=True, help="the copy's package name, e.g. ssmkit_s7")
    ap.add_argument("--out", type=Path, default=Path("bench/_ab/pkgs"))
    args = ap.parse_args()
    if not args.name.isidentifier() or args.name == "ssmkit":
        ap.error("--name must be a Python identifier other than ssmkit")
    print(make_copy(args.commit, args.name, args.out))


if __name__ == "__main__":
    main()
