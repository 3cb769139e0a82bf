"""kernels/registry"""
