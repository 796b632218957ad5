"""Re-materialise the before/after files of the real-bug benchmark from local git repositories.

Usage::

    python benchmarks/real_bugs/fetch_files.py [--index INDEX] [--out DIR] [--repos DIR ...]

For every row of ``index.csv`` it writes ``DIR/<id>/before.py`` (the file at the fix commit's
first parent, ``git show <fix_commit>^:<path>``, or the path it had there when the fixing commit
renamed it) and ``DIR/<id>/after.py`` (``git show <fix_commit>:<path>``).  It downloads nothing:
each repository must already be on this machine, either as a bare snapshot
``<root>/<owner>+<name>/repo`` (the layout of ``/work/.mirror``), as
``<root>/<owner>+<name>/repo/.git``, or as an ordinary clone ``<root>/<name>`` or
``<root>/<owner>/<name>``.  Several ``--repos`` roots may be given; the first that holds the fix
commit wins.  Rows whose repository or commit cannot be found are listed and skipped.

The third-party files are written outside the project (default ``/tmp/real_bugs``) and are never
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


def show(git_dir: Path, spec: str) -> Optional[bytes]:
    proc = subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", spec],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return proc.stdout if proc.returncode == 0 else None


def renamed_from(git_dir: Path, commit: str, path: str) -> Optional[str]:
    """The parent-side path of ``path`` when the fixing commit renamed the file, else None."""
    proc = subprocess.run(
        ["git", "--git-dir", str(git_dir), "diff", "--name-status", "-M", commit + "^", commit],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[0].startswith("R") and fields[2] == path:
            return fields[1]
    return None


def materialise(row: Dict[str, str], roots: List[Path], out: Path) -> Optional[str]:
    """Writes the row's before/after files; returns None, or why it could not."""
    git_dir = find_git_dir(roots, row["repository"], row["fix_commit"])
    if git_dir is None:
        return "no local repository holds {} {}".format(row["repository"], row["fix_commit"][:12])
    before = show(git_dir, "{}^:{}".format(row["fix_commit"], row["path"]))
    if before is None:
        source = renamed_from(git_dir, row["fix_commit"], row["path"])
        if source is not None:
            before = show(git_dir, "{}^:{}".format(row["fix_commit"], source))
    after = show(git_dir, "{}:{}".format(row["fix_commit"], row["path"]))
    if before is None or after is None:
        return "{} is missing on one side of {}".format(row["path"], row["fix_commit"][:12])
    folder = out / row["id"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "before.py").write_bytes(before)
    (folder / "after.py").write_bytes(after)
    return None


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(
        __doc__.split("\n\n")[0], HERE / "index.csv", Path("/tmp/real_bugs"), "folder receiving <id>/before.py", argv
    )
    rows = read_index(args.index)
    failed = 0
    for row in rows:
        problem = materialise(row, args.repos, args.out)
        if problem is not None:
            failed += 1
            print("{}: skipped, {}".format(row["id"], problem), file=sys.stderr)
    print("{} of {} rows written under {}".format(len(rows) - failed, len(rows), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
