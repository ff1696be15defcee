"""suanli.inventory"""
