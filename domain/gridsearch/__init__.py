"""domain/gridsearch"""
