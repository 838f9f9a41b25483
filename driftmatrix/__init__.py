"""driftmatrix: does what the vLLM docs tell people to run actually run?"""

__version__ = "0.1.0"
