"""The roofline model: every formula, the records and the RooflineModelDatabase.

``model`` (rates, intensities, bound-by, efficiency, vectorized with numpy; records and the
database) and ``compare`` (two selections side by side). Imports only ``platforms``,
``ops``, ``peaks``, ``hlo``, ``xspace``, ``protos`` and the leaf modules.
"""
