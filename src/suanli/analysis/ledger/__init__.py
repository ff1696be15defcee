"""The efficiency ledger: per job MFU, goodput, where the time went, what it cost, when it ends
(docs/ledger.md). :func:`analyze` is the unit; the modules beside it are its pure parts."""

from suanli.analysis.ledger.adapter import TABLE_COLUMNS, LedgerConfig, LedgerResult, analyze, ledger_for_job
from suanli.analysis.ledger.job import JobLedger

__all__ = ["TABLE_COLUMNS", "JobLedger", "LedgerConfig", "LedgerResult", "analyze", "ledger_for_job"]
