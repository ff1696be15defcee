"""suanli.incidents"""
