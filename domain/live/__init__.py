"""domain/live"""
