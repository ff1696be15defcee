"""suanli: the compute actuary for GPU training clusters."""

__version__ = "0.1.0"
__all__ = ["__version__"]
