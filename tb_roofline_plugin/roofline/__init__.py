"""The roofline model: every formula, the records and the RooflineModelDatabase.

``formulas`` (rates, intensities, bound-by, efficiency, vectorized with numpy), ``records``
(the Program and op records, as columns), ``model`` (the database of a profile or a step) and
``compare`` (two selections side by side); ``docs/roofline-semantics.md`` defines them.
Imports only ``platforms``, ``ops``, ``peaks``, ``hlo``, ``xspace``, ``protos`` and the leaf
modules.
"""
