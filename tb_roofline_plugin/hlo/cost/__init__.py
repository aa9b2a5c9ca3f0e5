"""The Python HLO cost model: FLOPs and bytes of every instruction of an HLO module.

Split by op family (``docs/hlo-cost.md``): ``shapes`` (shapes, dtypes and their bytes),
``costs`` (``InstructionCost``, ``CostSum``), ``generic`` (XLA's
``HloCostAnalysis`` rules for elementwise, dot, convolution, reduce, collectives, ...),
``library_calls`` (cuBLAS/cuBLASLt/hipBLASLt GEMMs, cuDNN/MIOpen convolutions, Triton GEMM
fusions), ``fusions`` (a fusion as the sum of its computation, with XLA's fusion byte rules)
and ``engine`` (``ModuleCosts``: one module, its computations, the per-instruction table).
Imports only ``protos`` and the leaf modules at the top of the package.
"""
