"""The verbs of spec/cli.md, one module each (its flags and its body), thin over the pipeline and
the reports. Exit status: 0 done, 2 bad input or usage, 3 ``check`` found problems, 1 an internal error (traceback only
under ``--debug``). Importing a verb module registers its verbs, so the imports below are in the
order ``suanli --help`` lists them."""

# isort: off
from suanli.cli import simulate
from suanli.cli import ingest
from suanli.cli import diagnose
from suanli.cli import profile
from suanli.cli import demo
from suanli.cli import serve
from suanli.cli import overrides
from suanli.cli import rules
from suanli.cli import actions
from suanli.cli import inventory
from suanli.cli.base import app, main, progress_bar
# isort: on

__all__ = ["actions", "app", "demo", "diagnose", "ingest", "inventory", "main", "overrides", "profile", "progress_bar",
           "rules", "serve", "simulate"]
