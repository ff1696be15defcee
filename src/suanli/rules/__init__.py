"""suanli.rules"""
