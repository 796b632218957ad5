"""Re-materialise the scripts and recipes of the reading benchmark from local git repositories.

Usage::

    python benchmarks/reading/fetch_files.py [--index INDEX] [--out DIR] [--repos DIR ...]

For every repository named in ``index.csv`` it writes the text files a reader may follow from a
script (``.py``, ``.yaml``, ``.yml``, ``.json``, at most 1 MiB each) at the indexed commit, under
``DIR/<owner>+<name>/`` with their paths in the repository, so that a script's sibling modules,
``config/*.py`` files and the DeepSpeed JSON a recipe names are where the script expects them.
It downloads nothing: each repository must already be on this machine, either as a bare snapshot
``<root>/<owner>+<name>/repo`` (the layout of ``/work/.mirror``), as
``<root>/<owner>+<name>/repo/.git``, or as an ordinary clone ``<root>/<name>`` or
``<root>/<owner>/<name>``. Several ``--repos`` roots may be given; the first that holds the
commit wins. Repositories that cannot be found are listed and skipped.

The third-party files are written outside the project (default ``/tmp/reading``) and are never
committed.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from mirror import find_git_dir, parse_args, read_index  # noqa: E402  (benchmarks/mirror.py)

#: What is written of a repository: the files a reader may follow from a script.
SUFFIXES = (".py", ".yaml", ".yml", ".json")

#: Larger files are skipped (the estimator refuses files over 1 MiB anyway).
MAX_BYTES = 1 << 20


def tree_files(git_dir: Path, commit: str) -> List[tuple]:
    """(object id, size, path) of the commit's text files worth writing."""
    proc = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-l", "-z", commit],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    found = []
    for entry in proc.stdout.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        parts = meta.split()
        if len(parts) < 4 or parts[1] != b"blob" or not parts[3].isdigit():
            continue
        name = path.decode("utf-8", "replace")
        if name.endswith(SUFFIXES) and int(parts[3]) <= MAX_BYTES and ".." not in name.split("/"):
            found.append((parts[2].decode(), int(parts[3]), name))
    return found


def write_tree(git_dir: Path, commit: str, folder: Path) -> int:
    """Writes the commit's text files under ``folder``; returns how many (absent objects skipped)."""
    files = tree_files(git_dir, commit)
    proc = subprocess.Popen(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    written = 0
    for oid, _size, name in files:
        proc.stdin.write(oid.encode() + b"\n")
        proc.stdin.flush()
        header = proc.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            continue
        data = proc.stdout.read(int(header[2]))
        proc.stdout.read(1)
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written += 1
    proc.stdin.close()
    proc.wait()
    return written


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(
        __doc__.split("\n\n")[0], HERE / "index.csv", Path("/tmp/reading"), "folder receiving <owner>+<name>/", argv
    )
    rows = read_index(args.index)
    commits: Dict[str, str] = {}
    for row in rows:
        commits.setdefault(row["repository"], row["commit"])
    failed = 0
    for repository, commit in commits.items():
        git_dir = find_git_dir(args.repos, repository, commit)
        if git_dir is None:
            failed += 1
            print("{}: skipped, no local repository holds {}".format(repository, commit[:12]), file=sys.stderr)
            continue
        folder = args.out / repository.replace("/", "+")
        count = write_tree(git_dir, commit, folder)
        missing = [row["path"] for row in rows
                   if row["repository"] == repository and not (folder / row["path"]).is_file()]
        for path in missing:
            print("{}: {} is not in {}".format(repository, path, commit[:12]), file=sys.stderr)
        print("{}: {} files".format(repository, count))
    print("{} of {} repositories written under {}".format(len(commits) - failed, len(commits), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
