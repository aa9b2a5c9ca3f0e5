"""From a decoded profile to op metrics and steps, per platform.

``tpu``, ``gpu``, ``cpu`` (with ``cpu_executions``, XLA:CPU program executions) and
``host_steps`` (step markers on host planes); ``analysis`` picks the platform of a profile
and analyses one host or all of them. Imports only ``ops``, ``peaks``, ``hlo``, ``xspace``,
``protos`` and the leaf modules.
"""
