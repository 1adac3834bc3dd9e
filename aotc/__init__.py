"""aotc: an ahead-of-time compiler from TensorFlow graphs to object files and C headers."""

__version__ = "0.1.0"
