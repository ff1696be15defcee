"""suanli.analysis"""
