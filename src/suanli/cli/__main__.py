"""``python -m suanli.cli``: the console script."""

from suanli.cli import main

main()
