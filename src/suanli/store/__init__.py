"""suanli.store"""
