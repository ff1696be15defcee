"""suanli.ingest"""
