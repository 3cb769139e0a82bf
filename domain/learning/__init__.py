"""domain/learning"""
