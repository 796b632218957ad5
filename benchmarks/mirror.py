"""Finding a commit in the local git repositories the benchmarks read (``fetch`` snapshots under
``<root>/<owner>+<name>/repo``, or ordinary clones); shared by the benchmarks' ``fetch_files.py``."""
from __future__ import annotations

import subprocess
from pathlib import Path
import argparse
import csv
from typing import Dict, Iterator, List, Optional


def candidate_git_dirs(root: Path, repository: str) -> Iterator[Path]:
    owner, name = repository.split("/", 1)
    snapshot = root / "{}+{}".format(owner, name) / "repo"
    yield snapshot / ".git"
    yield snapshot
    for clone in (root / name, root / owner / name, root / "{}+{}".format(owner, name)):
        yield clone / ".git"
        yield clone


def has_commit(git_dir: Path, commit: str) -> bool:
    if not git_dir.is_dir():
        return False
    proc = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "-e", commit + "^{commit}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return proc.returncode == 0


def find_git_dir(roots: List[Path], repository: str, commit: str) -> Optional[Path]:
    for root in roots:
        for git_dir in candidate_git_dirs(root, repository):
            if has_commit(git_dir, commit):
                return git_dir
    return None


def parse_args(
    description: str, index: Path, out: Path, out_help: str, argv: Optional[List[str]]
) -> argparse.Namespace:
    """The fetch scripts' command line: ``--index``, ``--out``, ``--repos``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--index", type=Path, default=index, help="the benchmark index (index.csv)")
    parser.add_argument("--out", type=Path, default=out, help=out_help)
    parser.add_argument(
        "--repos",
        type=Path,
        nargs="+",
        default=[Path("/work/.mirror")],
        help="folders holding the repositories (snapshots owner+name/repo or clones)",
    )
    return parser.parse_args(argv)


def read_index(index: Path) -> List[Dict[str, str]]:
    with index.open(newline="") as handle:
        return list(csv.DictReader(handle))
