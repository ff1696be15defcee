"""suanli.web"""
