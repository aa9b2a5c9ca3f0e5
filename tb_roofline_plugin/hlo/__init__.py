"""The HLO programs a profile carries and what each instruction costs.

``modules`` finds the optimized HLO modules of a profile's programs; ``cost/`` is the Python
HLO cost model (FLOPs and bytes per instruction, XLA's ``HloCostAnalysis`` rules). Imports
only ``xspace``, ``protos`` and the leaf modules at the top of the package.
"""
