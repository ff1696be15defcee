"""suanli.probe"""
