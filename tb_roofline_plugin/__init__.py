"""tb-roofline: roofline models of ML profiles (XSpace) for TensorBoard."""

__version__ = "0.1.0"
