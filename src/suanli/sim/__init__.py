"""suanli.sim"""
