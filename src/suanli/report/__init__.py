"""suanli.report"""
